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
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from torch_unet import UNet, larger_model_work, synthetic_shapes  # noqa: E402


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
                    larger_model_work(5)  # the metrics stream is still busy with the last step's logging
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
