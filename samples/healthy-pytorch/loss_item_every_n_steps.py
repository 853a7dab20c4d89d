#!/usr/bin/env python3
"""Healthy: the loss summed on the device and read every 10 steps."""
import torch

from healthy_loop import UNet, Profiler, batches, dataset, done, loader, loss_of, options

LOG_EVERY = 10


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    running = torch.zeros((), device=args.dev)
    with Profiler(args) as prof:
        for step, images, masks in batches(args, loader(args, dataset())):
            loss = loss_of(model, images, masks)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
            if step % LOG_EVERY == LOG_EVERY - 1:
                print(f"step {step} mean loss {running.item() / LOG_EVERY:.4f}")
                running.zero_()
            prof.step()
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
