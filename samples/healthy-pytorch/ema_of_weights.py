#!/usr/bin/env python3
"""Healthy: an exponential moving average of the weights, updated after each
step with foreach ops, as timm's ModelEmaV3 and torch.optim.swa_utils do."""
import copy

import torch

from healthy_loop import UNet, Profiler, batches, dataset, done, loader, loss_of, options

DECAY = 0.999


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    ema = copy.deepcopy(model).eval().requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with Profiler(args) as prof:
        for step, images, masks in batches(args, loader(args, dataset())):
            loss = loss_of(model, images, masks)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                ema_params, params = list(ema.parameters()), list(model.parameters())
                torch._foreach_lerp_(ema_params, params, 1.0 - DECAY)
                for e, b in zip(ema.buffers(), model.buffers()):
                    e.copy_(b)
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}")
            prof.step()
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
