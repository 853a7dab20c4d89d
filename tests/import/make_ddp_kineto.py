#!/usr/bin/env python3
"""A CPU DDP job with PyTorch's gloo backend, each rank profiled with
torch.profiler into OUT/rank<N>.kineto.json (Kineto's JSON, with its
distributedInfo), for the job tests that CI runs without torch.

Usage: make_ddp_kineto.py OUT [--world-size N] [--steps N]
Starts the ranks itself with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
set, as torchrun would (Debian's torchrun fails on Python 3.11)."""
import argparse
import os
import socket
import subprocess
import sys


def rank_main(out, steps):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=steps - 2, repeat=1)
    path = os.path.join(out, f"rank{rank}.kineto.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(steps):
            x = torch.rand(8, 3, 32, 32)
            loss = model(x).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_main:
        return rank_main(args.out, args.steps)
    os.makedirs(args.out, exist_ok=True)
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = []
    for rank in range(args.world_size):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.world_size),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        ranks.append(subprocess.Popen([sys.executable, __file__, args.out, "--steps", str(args.steps), "--rank-main"],
                                      env=env))
    return max(r.wait() for r in ranks)


if __name__ == "__main__":
    sys.exit(main())
