#!/usr/bin/env python3
"""scalar-indexing (GD005), PyTorch: after each epoch the validation IoU is
counted pixel by pixel, reading the predicted mask from the device with
`pred[i].item()` in a Python loop, as the gdrt and CUDA twins do. Each
.item() is a blocking 4-byte device-to-host copy that waits for the GPU:
16 x 32 x 32 = 16384 round trips per validation, where one copy of 64 KiB
does, or none when the IoU is summed on the device. The training steps read
nothing. The fixed twin computes the IoU on the device and reads that one
scalar (fixed.py).
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
    val_x, truth = val_x.to(dev), val_y.flatten().tolist()
    reads = 0
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
            pred = (model(val_x) > 0).float().flatten()  # stays on the device
        inter = union = 0.0
        reads = 0
        for i in range(pred.numel()):
            p, t = pred[i].item(), truth[i]  # one blocking device read per pixel
            reads += 1
            inter += p * t
            union += p + t - p * t
        ms = 1000 * (time.perf_counter() - start)
        print(f"epoch {epoch + 1}: val IoU {inter / union if union else 1.0:.3f} ({ms:.1f} ms to read the mask)")
    if reads > 1:
        print(f"symptom: {reads} blocking copies of 4 B to read one mask")
    return 0


if __name__ == "__main__":
    sys.exit(main())
