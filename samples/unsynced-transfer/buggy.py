#!/usr/bin/env python3
"""unsynced-transfer (GD003), PyTorch: the predictions come back to the host
with a non_blocking copy and the IoU is computed from them at once. The copy
lands in pinned memory and is still queued behind the forward pass, so the
host reads whatever the buffer held before: the metric is garbage. fixed.py
synchronises before reading.
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from torch_unet import UNet, larger_model_work, synthetic_shapes  # noqa: E402


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
        logits = model(val_x.to(dev))
        larger_model_work(5)  # the rest of a larger model's forward pass
        probs = torch.sigmoid(logits).to("cpu", non_blocking=True)  # overlaps the copy with the host work
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
