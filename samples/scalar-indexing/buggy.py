#!/usr/bin/env python3
"""scalar-indexing (GD005), PyTorch: a small UNet trained on synthetic shapes,
with the running loss for the progress line taken with `loss.item()` every
step. Each .item() is a 4-byte device-to-host copy that waits for the GPU to
finish the step: the host cannot queue the next step ahead, once per step.
The fixed twin sums the loss on the GPU and reads it once per epoch (fixed.py).
"""
import sys
import time

import torch
from torch import nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, base=8):
        super().__init__()
        self.down1, self.down2, self.mid = block(3, base), block(base, 2 * base), block(2 * base, 4 * base)
        self.up2, self.merge2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2), block(4 * base, 2 * base)
        self.up1, self.merge1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2), block(2 * base, base)
        self.out = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(nn.functional.max_pool2d(d1, 2))
        m = self.mid(nn.functional.max_pool2d(d2, 2))
        u2 = self.merge2(torch.cat([self.up2(m), d2], 1))
        return self.out(self.merge1(torch.cat([self.up1(u2), d1], 1)))


def synthetic_shapes(count, size, seed):
    """Noisy images with one bright disc each, and the disc's mask."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    centre = torch.rand(count, 2, 1, 1, generator=g) * size
    radius = (0.1 + 0.15 * torch.rand(count, 1, 1, generator=g)) * size
    mask = (((xx - centre[:, 0]) ** 2 + (yy - centre[:, 1]) ** 2) < radius**2).float().unsqueeze(1)
    images = 0.2 + 0.5 * mask.expand(count, 3, size, size) + 0.3 * torch.rand(count, 3, size, size, generator=g)
    return images, mask


def main():
    if not torch.cuda.is_available():
        print("no CUDA device available to PyTorch")
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = UNet().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    images, masks = (t.pin_memory() for t in synthetic_shapes(256, 64, 1))  # batches copied asynchronously
    for epoch in range(2):
        start, running, steps = time.perf_counter(), 0.0, 0
        for i in range(0, len(images), 16):
            x, y = images[i : i + 16].to(dev, non_blocking=True), masks[i : i + 16].to(dev, non_blocking=True)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.item()  # a blocking 4-byte read, every step
            steps += 1
        elapsed = time.perf_counter() - start
        print(f"epoch {epoch + 1}: train loss {running / steps:.4f}, {1000 * elapsed / steps:.1f} ms per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
