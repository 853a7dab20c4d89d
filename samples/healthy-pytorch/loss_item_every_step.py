#!/usr/bin/env python3
"""Healthy: the loss read with .item() every step, for the progress line.
Each read waits for the step's work, but the host has queued it all by then,
so the GPU is never left without work for long."""
import torch

from healthy_loop import UNet, dataset, done, loader, options, train_step, training


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step, images, masks in training(args, loader(args, dataset())):
        loss = train_step(model, opt, images, masks)
        print(f"step {step} loss {loss.item():.4f}")
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
