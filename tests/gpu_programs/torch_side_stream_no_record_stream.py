#!/usr/bin/env python3
"""Reproduces GD004 (premature-free) in PyTorch.

30 steps: the main stream fills a 4 MiB tensor x with the step number; a side
stream waits for it, is busy for ~10 ms (torch.cuda._sleep stands for the
side stream's own work), then reads x. The main stream drops x without
x.record_stream(side): PyTorch's caching allocator only knows the stream x was
allocated on, so it hands x's block at once to the next tensor of that size on
the main stream, z, filled with -1 while the side stream has not read x yet.
The side stream reads z's values instead of x's: the step is corrupted. In the
case observed on an H100, 6 of 30 steps were; here the side stream's wait
makes it most of them.

A correct program calls x.record_stream(side) before dropping x (the
allocator then waits for the side stream's work before reusing the block), or
keeps x alive until main.wait_stream(side).

Prints one line and exits 0:
  torch_side_stream_no_record_stream: reused <r>/30 steps, corrupted <k>/30 steps
Exits 3 when PyTorch has no usable CUDA device.
"""
import sys

import torch

STEPS = 30
N = 1 << 20  # floats: 4 MiB
SIDE_WORK_CYCLES = 20_000_000  # ~10 ms at 2 GHz


def main():
    if not torch.cuda.is_available():
        print("torch_side_stream_no_record_stream: no CUDA device available to PyTorch")
        return 3
    dev = torch.device("cuda")
    main_stream = torch.cuda.current_stream()
    side = torch.cuda.Stream()

    results, reused = [], 0
    for step in range(STEPS):
        value = float(step + 1)
        x = torch.full((N,), value, device=dev)
        side.wait_stream(main_stream)
        with torch.cuda.stream(side):
            torch.cuda._sleep(SIDE_WORK_CYCLES)
            results.append((value, x * 2))  # reads x ~10 ms from now
        x_address = x.data_ptr()
        del x  # the mistake: no x.record_stream(side), the block is free again on the main stream
        z = torch.full((N,), -1.0, device=dev)  # gets x's block and overwrites it
        reused += z.data_ptr() == x_address
        del z
    torch.cuda.synchronize()

    # One read of the device for all steps, not one per step.
    corrupted = int(torch.stack([(y != 2 * value).any() for value, y in results]).sum())
    print(f"torch_side_stream_no_record_stream: reused {reused}/{STEPS} steps, corrupted {corrupted}/{STEPS} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
