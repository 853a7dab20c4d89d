#!/usr/bin/env python3
"""Healthy: the loss read with .item() every step, for the progress line.
Each read waits for the step's work, but the host has queued it all by then,
so the GPU is never left without work for long."""
import torch

from healthy_loop import UNet, Profiler, batches, dataset, done, loader, loss_of, options


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with Profiler(args) as prof:
        for step, images, masks in batches(args, loader(args, dataset())):
            loss = loss_of(model, images, masks)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            print(f"step {step} loss {loss.item():.4f}")
            prof.step()
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
