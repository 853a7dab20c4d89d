#!/usr/bin/env python3
"""pageable-async-copy (GD009), PyTorch: the batches are copied to the GPU with
non_blocking=True so that the copy overlaps the previous step, but the
DataLoader hands them out in ordinary (pageable) host memory. The copy
engine cannot read pageable memory later, so the "asynchronous" call returns
only once the copy is done, and with it the work queued before it: the host
stalls every step instead of queuing the next one. fixed.py lets the
DataLoader pin the batches (pin_memory=True).
"""
import sys
import time

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
    loader = DataLoader(TensorDataset(images, masks), batch_size=16, shuffle=True)

    in_copies = 0.0  # host time spent in the copy calls
    steps = 0
    loop = time.perf_counter()
    for epoch in range(2):
        for x, y in loader:
            start = time.perf_counter()
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)  # meant to overlap the previous step
            in_copies += time.perf_counter() - start
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
    torch.cuda.synchronize()

    total = time.perf_counter() - loop
    share = in_copies / total
    print(f"{steps} steps in {1e3 * total:.1f} ms; the non-blocking batch copies held the host "
          f"{1e3 * in_copies:.1f} ms of it ({100 * share:.0f}%)")
    if share > 0.25:
        print("symptom: the asynchronous copies blocked the host for most of the training loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
