#!/usr/bin/env python3
"""scalar-indexing (GD005), PyTorch, fixed: the validation IoU is summed on
the device and read as one scalar (buggy.py reads the predicted mask from the
device one pixel at a time).
"""
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from torch_unet import UNet, synthetic_shapes  # noqa: E402


def main():
    if not torch.cuda.is_available():
        print("no CUDA device available to PyTorch")
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = UNet().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    images, masks = synthetic_shapes(128, 32, 1)
    loader = DataLoader(TensorDataset(images, masks), batch_size=16, shuffle=True, pin_memory=True)
    val_x, val_y = synthetic_shapes(16, 32, 99)
    val_x, truth = val_x.to(dev), val_y.to(dev)
    for epoch in range(2):
        model.train()
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        model.eval()
        start = time.perf_counter()
        with torch.no_grad():
            pred = (model(val_x) > 0).float()
            inter, union = (pred * truth).sum(), (pred + truth - pred * truth).sum()
            iou = torch.where(union > 0, inter / union, torch.ones_like(union)).item()  # the one read
        ms = 1000 * (time.perf_counter() - start)
        print(f"epoch {epoch + 1}: val IoU {iou:.3f} ({ms:.1f} ms to compute it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
