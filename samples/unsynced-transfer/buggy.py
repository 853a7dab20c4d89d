#!/usr/bin/env python3
"""unsynced-transfer (GD003), PyTorch: the predictions come back to the host
with a non_blocking copy and the IoU is computed from them at once. The copy
lands in pinned memory and is still queued behind the forward pass, so the
host reads whatever the buffer held before: the metric is garbage. fixed.py
synchronises before reading.
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):  # depth 2
    def __init__(self, base=32):
        super().__init__()
        self.enc1, self.enc2, self.mid = block(3, base), block(base, 2 * base), block(2 * base, 4 * base)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2), block(4 * base, 2 * base)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2), block(2 * base, base)
        self.head = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))


def synthetic_shapes(count, size, seed):
    """Noisy images with a bright disc each, and the discs' masks."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cx, cy, r = torch.rand(3, count, 1, 1, generator=g) * torch.tensor([size, size, 0.25 * size]).view(3, 1, 1, 1)
    masks = ((xx - cx) ** 2 + (yy - cy) ** 2 < (r + 0.1 * size) ** 2).float().unsqueeze(1)
    images = 0.2 + 0.6 * masks.expand(-1, 3, -1, -1) + 0.3 * torch.rand(count, 3, size, size, generator=g)
    return images, masks

def main():
    if not torch.cuda.is_available():
        print("no CUDA device available to PyTorch")
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = UNet().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    images, masks = synthetic_shapes(128, 128, 1)
    loader = DataLoader(TensorDataset(images, masks), batch_size=16, shuffle=True, pin_memory=True)
    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    model.eval()
    val_x, val_y = synthetic_shapes(16, 128, 99)
    with torch.no_grad():
        probs = torch.sigmoid(model(val_x.to(dev))).to("cpu", non_blocking=True)  # overlaps the copy with the host work
    early = probs.clone()  # but nothing waited for it
    pred = (early > 0.5).float()
    inter, union = (pred * val_y).sum().item(), (pred + val_y - pred * val_y).sum().item()
    print(f"val IoU {inter / union if union else 1.0:.3f}")

    # What the copy really brought, once it has landed: how much of the
    # metric above was computed from values that were not the predictions.
    torch.cuda.synchronize()
    stale = (early != probs).sum().item()
    if stale:
        print(f"symptom: {stale} of {probs.numel()} predictions were read before the copy landed")
    else:
        print(f"all {probs.numel()} predictions were read after the copy landed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
