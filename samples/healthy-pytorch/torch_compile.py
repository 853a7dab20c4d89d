#!/usr/bin/env python3
"""Healthy: the model compiled with torch.compile. The first steps compile
(and Triton autotunes, syncing between candidates); the rest run the fused
kernels."""
import torch

from healthy_loop import UNet, Profiler, batches, dataset, done, loader, loss_of, options


def main():
    args = options(__doc__)
    if not hasattr(torch, "compile"):
        print(f"torch.compile needs PyTorch 2.0 or later; this is {torch.__version__}")
        return 3
    model = torch.compile(UNet().to(args.dev))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with Profiler(args) as prof:
        for step, images, masks in batches(args, loader(args, dataset())):
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
