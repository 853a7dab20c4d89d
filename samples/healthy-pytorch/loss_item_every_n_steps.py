#!/usr/bin/env python3
"""Healthy: the loss summed on the device and read every 10 steps."""
import torch

from healthy_loop import UNet, dataset, done, loader, options, train_step, training

LOG_EVERY = 10


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    running = torch.zeros((), device=args.dev)
    for step, images, masks in training(args, loader(args, dataset())):
        running += train_step(model, opt, images, masks).detach()
        if step % LOG_EVERY == LOG_EVERY - 1:
            print(f"step {step} mean loss {running.item() / LOG_EVERY:.4f}")
            running.zero_()
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
