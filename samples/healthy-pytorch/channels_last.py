#!/usr/bin/env python3
"""Healthy: the model and its inputs in channels_last memory format, which
cuDNN's NHWC convolutions run on without transposing."""
import torch

from healthy_loop import UNet, dataset, done, loader, log, options, train_step, training


def main():
    args = options(__doc__)
    model = UNet().to(args.dev, memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step, images, masks in training(args, loader(args, dataset())):
        loss = train_step(model, opt, images.contiguous(memory_format=torch.channels_last), masks)
        log(step, loss)
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
