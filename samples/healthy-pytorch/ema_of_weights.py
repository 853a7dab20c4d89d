#!/usr/bin/env python3
"""Healthy: an exponential moving average of the weights, updated after each
step with foreach ops, as timm's ModelEmaV3 and torch.optim.swa_utils do."""
import copy

import torch

from healthy_loop import UNet, dataset, done, loader, log, options, train_step, training

DECAY = 0.999


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    ema = copy.deepcopy(model).eval().requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step, images, masks in training(args, loader(args, dataset())):
        loss = train_step(model, opt, images, masks)
        with torch.no_grad():
            torch._foreach_lerp_(list(ema.parameters()), list(model.parameters()), 1.0 - DECAY)
            for e, b in zip(ema.buffers(), model.buffers()):
                e.copy_(b)
        log(step, loss)
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
