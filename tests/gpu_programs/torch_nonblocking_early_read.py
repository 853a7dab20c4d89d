#!/usr/bin/env python3
"""Reproduces GD003 (unsynced-transfer) in PyTorch.

A UNet (base 32, depth 4, BatchNorm and ReLU) trains for 30 steps on a batch
of 8 pinned 3x128x128 images, copied with non_blocking=True. Each step copies
its predictions back with `.to("cpu", non_blocking=True)`: the result lives in
pinned memory and the copy is only queued. The loop reads it at once, as a
metric or a logger would, before the torch.cuda.synchronize() that comes after
the loop. Where the GPU was still behind, that read saw memory the copy had
not written yet: the step is stale. How many steps are stale depends on how
far the GPU is behind; in the case observed on an H100, 7 of 30 were.

A correct loop waits for the copy before reading it: torch.cuda.synchronize(),
an event recorded after the copy and synchronised, or a blocking copy
(non_blocking=False).

Prints one line and exits 0:
  torch_nonblocking_early_read: stale <k>/30 steps, pinned True
Exits 3 when PyTorch has no usable CUDA device.
"""
import sys

import torch
from torch import nn
import torch.nn.functional as F

STEPS = 30


def block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, base=32, depth=4):
        super().__init__()
        ch = [base * 2 ** i for i in range(depth + 1)]
        self.downs = nn.ModuleList(block(3 if i == 0 else ch[i - 1], ch[i]) for i in range(depth))
        self.bottom = block(ch[depth - 1], ch[depth])
        self.ups = nn.ModuleList(nn.ConvTranspose2d(ch[i + 1], ch[i], 2, stride=2) for i in reversed(range(depth)))
        self.decs = nn.ModuleList(block(2 * ch[i], ch[i]) for i in reversed(range(depth)))
        self.head = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, dec, skip in zip(self.ups, self.decs, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def main():
    if not torch.cuda.is_available():
        print("torch_nonblocking_early_read: no CUDA device available to PyTorch")
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = UNet().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    images = torch.rand(8, 3, 128, 128).pin_memory()
    masks = (torch.rand(8, 1, 128, 128) > 0.5).float().pin_memory()

    early_reads, predictions = [], []
    for _ in range(STEPS):
        x = images.to(dev, non_blocking=True)
        y = masks.to(dev, non_blocking=True)
        logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        probs = torch.sigmoid(logits.detach()).to("cpu", non_blocking=True)  # pinned; the copy is queued
        early_reads.append(probs.clone())  # the mistake: read before any synchronisation
        predictions.append(probs)
    torch.cuda.synchronize()  # the copies are complete from here on

    stale = sum(not torch.equal(early, final) for early, final in zip(early_reads, predictions))
    print(f"torch_nonblocking_early_read: stale {stale}/{STEPS} steps, pinned {predictions[0].is_pinned()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
