#!/usr/bin/env python3
"""Reproduces GD003 (unsynced-transfer) in PyTorch.

A UNet (base 32, depth 4, BatchNorm and ReLU) trains for 30 steps on a batch
of 8 pinned 3x128x128 images, copied with non_blocking=True. Each step copies
its predictions back with `.to("cpu", non_blocking=True)`: the result lives in
pinned memory and the copy is only queued. The loop reads it at once, as a
metric or a logger would, before the torch.cuda.synchronize() that comes after
the loop. Where the GPU was still behind, that read saw memory the copy had
not written yet: the step is stale. How many steps are stale depends on how
far the GPU is behind; in the case observed on an H100, 7 of 30 were, and
none on an H200 until each step kept the GPU busy 2 ms longer (as a larger
model does).

A correct loop waits for the copy before reading it: torch.cuda.synchronize(),
an event recorded after the copy and synchronised, or a blocking copy
(non_blocking=False).

Prints one line and exits 0:
  torch_nonblocking_early_read: stale <k>/30 steps, pinned True
Exits 3 when PyTorch has no usable CUDA device.
"""
import sys
from pathlib import Path

import torch
from torch import nn

# The UNet of shared/data/gpu, as the tracer's benchmark trains it.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "trace"))
from torch_unet_step import UNet  # noqa: E402

STEPS = 30
# ~2 ms at 2 GHz: a fast GPU (an H200) runs this small UNet's step ahead of
# the host and nothing is ever stale; a real model's step keeps it behind.
BEHIND_CYCLES = 4_000_000


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
        torch.cuda._sleep(BEHIND_CYCLES)  # the rest of a larger model's step: the GPU is behind the host
        probs = torch.sigmoid(logits.detach()).to("cpu", non_blocking=True)  # pinned; the copy is queued
        early_reads.append(probs.clone())  # the mistake: read before any synchronisation
        predictions.append(probs)
    torch.cuda.synchronize()  # the copies are complete from here on

    stale = sum(not torch.equal(early, final) for early, final in zip(early_reads, predictions))
    print(f"torch_nonblocking_early_read: stale {stale}/{STEPS} steps, pinned {predictions[0].is_pinned()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
