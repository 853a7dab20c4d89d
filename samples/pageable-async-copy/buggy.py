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
from pathlib import Path
import time

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
            larger_model_work(100)  # a larger model: the GPU, not the host, sets the pace
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
