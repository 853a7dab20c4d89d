"""A PyTorch UNet training loop on CUDA, the one of shared/data/gpu: base 32,
depth 4, BatchNorm and ReLU, batches of 8 pinned 3x128x128 images copied with
non_blocking=True, Adam, BCE-with-logits, cudnn.benchmark on.

--mistake makes it the loop of one of shared/data/gpu's mistaken runs:
  sync_in_loop     torch.cuda.synchronize() after every down and up block,
                   loss.item() every step, blocking batch copies (GD010);
  pageable_async   batches not pinned, copied with non_blocking=True (GD009).

Writes {"step_ms": [...], "steps": N, "total_s": ...} to --out. With
--profiler the loop runs under torch.profiler recording CUDA activity only,
as a user comparing tools would. With --kineto FILE the measured steps run
under torch.profiler as shared/data/gpu's exports were made (CPU and CUDA
activity, memory and shapes, one warm-up step and four recorded ones, one
ProfilerStep#N each), exported to FILE with export_chrome_trace.
--device cpu runs the same loop without a GPU, to check the script itself.
Exit 3 when PyTorch has no usable CUDA.
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
    # after_block runs after every down and up block (sync_in_loop's mistake).
    def __init__(self, base=32, depth=4, after_block=None):
        super().__init__()
        self.after_block = after_block or (lambda: None)
        widths = [base * 2 ** i for i in range(depth + 1)]
        self.down = nn.ModuleList([block(3, widths[0])] + [block(widths[i], widths[i + 1]) for i in range(depth)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2) for i in reversed(range(depth))])
        self.merge = nn.ModuleList([block(widths[i] * 2, widths[i]) for i in reversed(range(depth))])
        self.head = nn.Conv2d(widths[0], 1, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.down):
            x = down(x if i == 0 else nn.functional.max_pool2d(x, 2))
            self.after_block()
            skips.append(x)
        skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
            self.after_block()
        return self.head(x)


KINETO_WARMUP, KINETO_ACTIVE = 1, 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--mistake", choices=["none", "sync_in_loop", "pageable_async"], default="none")
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--kineto", metavar="FILE")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.profiler and args.kineto:
        parser.error("--profiler and --kineto are two ways to profile: give one")
    if args.kineto and args.steps < KINETO_WARMUP + KINETO_ACTIVE:
        parser.error(f"--kineto records steps {KINETO_WARMUP + 1} to {KINETO_WARMUP + KINETO_ACTIVE}: "
                     f"give --steps {KINETO_WARMUP + KINETO_ACTIVE} or more")
    start = time.perf_counter()
    on_gpu = args.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("PyTorch has no usable CUDA device", file=sys.stderr)
        return 3
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    torch.backends.cudnn.benchmark = True
    device = torch.device(args.device)
    model = UNet(after_block=sync if args.mistake == "sync_in_loop" else None).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    images = torch.randn(8, 3, 128, 128)
    masks = (torch.rand(8, 1, 128, 128) > 0.5).float()
    if on_gpu and args.mistake != "pageable_async":
        images, masks = images.pin_memory(), masks.pin_memory()
    non_blocking = args.mistake != "sync_in_loop"

    def step():
        x = images.to(device, non_blocking=non_blocking)
        y = masks.to(device, non_blocking=non_blocking)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if args.mistake == "sync_in_loop":
            loss.item()

    for _ in range(args.warmup):
        step()
    sync()
    profiler = None
    if args.profiler:
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    elif args.kineto:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if on_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = torch.profiler.profile(
            activities=activities, profile_memory=True, record_shapes=True,
            schedule=torch.profiler.schedule(wait=0, warmup=KINETO_WARMUP, active=KINETO_ACTIVE, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(args.kineto))
    if profiler is not None:
        profiler.__enter__()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        if args.kineto:
            profiler.step()
    if profiler is not None:
        profiler.__exit__(None, None, None)
    with open(args.out, "w") as f:
        json.dump({"step_ms": times, "steps": args.steps, "total_s": time.perf_counter() - start}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
