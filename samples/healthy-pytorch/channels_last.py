#!/usr/bin/env python3
"""Healthy: the model and its inputs in channels_last memory format, which
cuDNN's NHWC convolutions run on without transposing."""
import torch

from healthy_loop import UNet, Profiler, batches, dataset, done, loader, loss_of, options


def main():
    args = options(__doc__)
    model = UNet().to(args.dev, memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with Profiler(args) as prof:
        for step, images, masks in batches(args, loader(args, dataset())):
            images = images.contiguous(memory_format=torch.channels_last)
            loss = loss_of(model, images, masks)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}")
            prof.step()
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
