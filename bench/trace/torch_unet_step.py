"""A PyTorch UNet training loop on CUDA, the one of shared/data/gpu: base 32,
depth 4, BatchNorm and ReLU, batches of 8 pinned 3x128x128 images copied with
non_blocking=True, Adam, BCE-with-logits, cudnn.benchmark on.

Writes {"step_ms": [...], "steps": N, "total_s": ...} to --out. With
--profiler the loop runs under torch.profiler recording CUDA activity only,
as a user comparing tools would. Exit 3 when PyTorch has no usable CUDA.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn


def block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, base=32, depth=4):
        super().__init__()
        widths = [base * 2 ** i for i in range(depth + 1)]
        self.down = nn.ModuleList([block(3, widths[0])] + [block(widths[i], widths[i + 1]) for i in range(depth)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2) for i in reversed(range(depth))])
        self.merge = nn.ModuleList([block(widths[i] * 2, widths[i]) for i in reversed(range(depth))])
        self.head = nn.Conv2d(widths[0], 1, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.down):
            x = down(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    start = time.perf_counter()
    if not torch.cuda.is_available():
        print("PyTorch has no usable CUDA device", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    model = UNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    images = torch.randn(8, 3, 128, 128).pin_memory()
    masks = (torch.rand(8, 1, 128, 128) > 0.5).float().pin_memory()

    def step():
        x = images.to(device, non_blocking=True)
        y = masks.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    profiler = None
    if args.profiler:
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    if profiler is not None:
        profiler.__exit__(None, None, None)
    with open(args.out, "w") as f:
        json.dump({"step_ms": times, "steps": args.steps, "total_s": time.perf_counter() - start}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
