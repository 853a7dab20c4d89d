#!/usr/bin/python3
"""PyTorch side of bench/unet_step: prints the median seconds of one training step.

    unet_step.py THREADS STEPS BASE DEPTH BATCH SIZE
The model is the same UNet the golden tests use (tests/runtime/golden/make_golden.py).
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing the golden script must not litter the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "runtime", "golden"))
from make_golden import UNet  # noqa: E402

threads, steps, base, depth, batch, size = (int(a) for a in sys.argv[1:7])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = UNet(3, 1, base, depth, True)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(batch, 3, size, size)
t = (torch.rand(batch, 1, size, size) > 0.5).float()
times = []
for i in range(steps + 2):
    start = time.perf_counter()
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(model(x), t)
    loss.backward()
    opt.step()
    if i >= 2:
        times.append(time.perf_counter() - start)
print(f"{statistics.median(times):.6f}")
