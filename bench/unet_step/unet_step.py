#!/usr/bin/python3
"""PyTorch side of bench/unet_step, driven step by step over stdin/stdout.

    unet_step.py THREADS BASE DEPTH BATCH SIZE [DEVICE]
Builds the model, prints "ready", then for every "step" line it reads runs one
training step and prints its wall and process CPU seconds; it ends at "quit"
or end of input. The
C++ side alternates gdrt and PyTorch steps, so both see the same machine load.
DEVICE (default cpu) is a torch device such as cuda; on a GPU each step ends
with a synchronize, so its time is the GPU's (bench/devices).
The model is the same UNet the golden tests use (tests/runtime/golden/make_golden.py).
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing the golden script must not litter the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "runtime", "golden"))
from make_golden import UNet  # noqa: E402

threads, base, depth, batch, size = (int(a) for a in sys.argv[1:6])
device = torch.device(sys.argv[6] if len(sys.argv) > 6 else "cpu")
if device.type == "cuda" and not torch.cuda.is_available():
    sys.exit(3)  # no "ready": the C++ side reports PyTorch as unavailable
# As bench/trace/torch_unet_step.py: PyTorch's GPU training default in practice.
torch.backends.cudnn.benchmark = device.type == "cuda"
torch.set_num_threads(threads)
torch.manual_seed(0)
model = UNet(3, 1, base, depth, True).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(batch, 3, size, size).to(device)
t = (torch.rand(batch, 1, size, size) > 0.5).float().to(device)


def synchronize():
    if device.type == "cuda":
        torch.cuda.synchronize(device)


print("ready", flush=True)
for line in sys.stdin:
    if line.strip() != "step":
        break
    start, cpu_start = time.perf_counter(), time.process_time()
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(model(x), t)
    loss.backward()
    opt.step()
    synchronize()
    print(f"{time.perf_counter() - start:.6f} {time.process_time() - cpu_start:.6f}", flush=True)
