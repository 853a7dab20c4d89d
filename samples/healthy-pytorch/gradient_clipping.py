#!/usr/bin/env python3
"""Healthy: gradients clipped to a norm of 1 before each optimizer step.
clip_grad_norm_ computes the norm and scales on the device; nothing is read."""
import torch

from healthy_loop import UNet, dataset, done, loader, log, loss_of, options, training


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step, images, masks in training(args, loader(args, dataset())):
        loss = loss_of(model, images, masks)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        log(step, loss)
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
