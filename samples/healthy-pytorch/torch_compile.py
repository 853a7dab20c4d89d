#!/usr/bin/env python3
"""Healthy: the model compiled with torch.compile. The first steps compile
(and Triton autotunes, syncing between candidates); the rest run the fused
kernels."""
import torch

from healthy_loop import UNet, dataset, done, loader, log, options, train_step, training


def main():
    args = options(__doc__)
    if not hasattr(torch, "compile"):
        print(f"torch.compile needs PyTorch 2.0 or later; this is {torch.__version__}")
        return 3
    model = torch.compile(UNet().to(args.dev))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step, images, masks in training(args, loader(args, dataset())):
        log(step, train_step(model, opt, images, masks))
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
