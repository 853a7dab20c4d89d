#!/usr/bin/env python3
"""Healthy: mixed precision with autocast and a GradScaler. scaler.step()
reads whether the unscaled gradients held an inf or a NaN, a sync every
step, as PyTorch's AMP recipe does; the progress line reads the loss and
the scale (two more)."""
import torch

from healthy_loop import UNet, dataset, done, loader, loss_of, options, training


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    on_gpu = args.device == "cuda"  # on the CPU, only a check that the program runs: no autocast, no scaling
    if hasattr(torch.amp, "GradScaler"):  # PyTorch 2.3 on
        scaler = torch.amp.GradScaler(args.device, enabled=on_gpu)
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=on_gpu)
    for step, images, masks in training(args, loader(args, dataset())):
        with torch.autocast(args.device, dtype=torch.float16, enabled=on_gpu):
            loss = loss_of(model, images, masks)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        print(f"step {step} loss {loss.item():.4f} scale {scaler.get_scale():.0f}")
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
