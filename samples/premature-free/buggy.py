#!/usr/bin/env python3
"""premature-free (GD004), PyTorch: the training IoU is measured on a side
stream so that it overlaps the next step. The logits and masks it reads are
dropped when the loop moves on, without record_stream: PyTorch's caching
allocator only knows the stream they were allocated on, so the next step
gets their memory at once and overwrites it while the metrics stream, still
busy with the first thresholds, has not read them yet: the logged IoU is
computed partly from the next step's tensors. fixed.py records them on the
metrics stream.
"""
import math
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

def mean_iou(logits, target):
    """IoU of the predicted mask, averaged over probability thresholds 0.1 .. 0.9."""
    total = 0
    for k in range(1, 10):
        pred = (logits > math.log(k / (10 - k))).float()
        inter = (pred * target).sum()
        total = total + inter / (pred.sum() + target.sum() - inter + 1e-6)
    return total / 9


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
    metrics = torch.cuda.Stream()

    logged, safe = [], []
    for epoch in range(2):
        for x, y in loader:  # the previous step's y is freed here, its logits at the forward pass
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            logits = model(x)
            loss = F.binary_cross_entropy_with_logits(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                safe.append(mean_iou(logits, y))  # the measurement: the same IoU, in the training stream's order
                metrics.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(metrics):  # the IoU overlaps the next step
                    logged.append(mean_iou(logits, y))

    # How many logged IoUs differ from the ones computed in order.
    torch.cuda.synchronize()
    got, want = torch.stack(logged).cpu(), torch.stack(safe).cpu()
    wrong = (~torch.isclose(got, want, rtol=0, atol=1e-5)).sum().item()
    print(f"last logged IoU {got[-1]:.3f} (in order: {want[-1]:.3f})")
    if wrong:
        print(f"symptom: {wrong} of {len(got)} logged IoUs were computed from memory the next step had reused")
    else:
        print(f"all {len(got)} logged IoUs match the ones computed in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
