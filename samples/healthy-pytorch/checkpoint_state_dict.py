#!/usr/bin/env python3
"""Healthy: a checkpoint saved every epoch from state_dict(), the model's and
the optimizer's, with torch.save. Saving copies every tensor to the host,
BatchNorm's 8-byte step counters among them, once an epoch."""
import os
import tempfile

import torch

from healthy_loop import UNet, dataset, done, loader, options, train_step, training


def main():
    args = options(__doc__)
    model = UNet().to(args.dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train_loader = loader(args, dataset())
    with tempfile.TemporaryDirectory() as folder:
        for step, images, masks in training(args, train_loader):
            loss = train_step(model, opt, images, masks)
            if step % args.epoch == args.epoch - 1:
                path = os.path.join(folder, "checkpoint.pt")
                torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, path)
                print(f"step {step} loss {loss.item():.4f}, saved {os.path.getsize(path)} bytes")
    return done(args)


if __name__ == "__main__":
    raise SystemExit(main())
