#!/usr/bin/env python3
"""A CPU DDP job with PyTorch's gloo backend, each rank profiled with
torch.profiler into Kineto's JSON (with its distributedInfo), for the job
tests that CI runs without torch.

Usage: make_ddp_kineto.py OUT [--world-size N] [--steps N] [--version V]
Without --version: a two-rank job whose last steps are profiled, written to
OUT/rank<N>.kineto.json (data/ddp-gloo-2).
With --version: a small training job (a UNet-ish block, a DataLoader over a
Dataset with a DistributedSampler, SGD, the loss all-reduced each step for
logging) of 4 ranks by default, every step profiled on every rank, written to
OUT/rank<N>.kineto.json.gz (gzip -9 -n) even when the rank fails:
  healthy    all ranks alike.
  straggler  rank 2's Dataset is slow (20 ms a sample, 80 ms a batch).
  desync     rank 1 skips the logging all-reduce of step 4.
  raise      rank 3's batch at step 5 is truncated (31 rows), so its UNet's
             skip connection raises a RuntimeError.
gloo's timeout is 30 s, so that a failing rank's peers learn of the failure
as in a real job, from its closed connections (in seconds), and not from a
timeout that races them.
Starts the ranks itself with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set, as torchrun would (Debian's torchrun fails on Python 3.11),
and prints each rank's exit status."""
import argparse
import os
import socket
import subprocess
import sys
import time

VERSIONS = ("healthy", "straggler", "desync", "raise")
BATCH = 4
STRAGGLER_RANK, STRAGGLER_SAMPLE_S = 2, 0.020
DESYNC_RANK, DESYNC_STEP = 1, 4
RAISE_RANK, RAISE_STEP = 3, 5


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


def version_rank_main(out, steps, version):
    import datetime

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, Dataset, DistributedSampler

    class Squares(Dataset):
        """Noisy images with a bright square, the square's mask as the target,
        made once from a fixed seed, so every run sees the same data."""

        def __init__(self, n, slow_s=0.0, truncated=()):
            g = torch.Generator().manual_seed(0)
            self.images = torch.rand(n, 3, 32, 32, generator=g) * 0.2
            self.masks = torch.zeros(n, 1, 32, 32)
            for i, (y, x) in enumerate(torch.randint(0, 24, (n, 2), generator=g).tolist()):
                self.images[i, :, y:y + 8, x:x + 8] += 0.8
                self.masks[i, :, y:y + 8, x:x + 8] = 1.0
            self.slow_s, self.truncated = slow_s, set(truncated)

        def __len__(self):
            return len(self.images)

        def __getitem__(self, i):
            if self.slow_s:
                time.sleep(self.slow_s)  # a slow disk or decoder
            if i in self.truncated:  # a file cut short: its last row missing
                return self.images[i, :, :-1], self.masks[i, :, :-1]
            return self.images[i], self.masks[i]

    class UNetBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
            self.down = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
            self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.dec = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))

        def forward(self, x):
            skip = self.enc(x)
            return self.dec(torch.cat([self.up(self.down(skip)), skip], dim=1))

    torch.set_num_threads(1)  # the ranks share the host's cores
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    data = Squares(steps * BATCH * world)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    if version == "straggler" and rank == STRAGGLER_RANK:
        data.slow_s = STRAGGLER_SAMPLE_S
    if version == "raise" and rank == RAISE_RANK:
        data.truncated = set(list(sampler)[RAISE_STEP * BATCH:(RAISE_STEP + 1) * BATCH])
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler)
    model = DistributedDataParallel(UNetBlock())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.BCEWithLogitsLoss()
    path = os.path.join(out, f"rank{rank}.kineto.json")
    # A schedule that always records: every step profiled, each a ProfilerStep#N range.
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                  schedule=lambda _: torch.profiler.ProfilerAction.RECORD)
    try:
        with prof:  # its exit stops the profiler on an exception too
            for step, (image, mask) in enumerate(loader):
                loss = loss_fn(model(image), mask)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                logged = loss.detach().clone()
                if version != "desync" or rank != DESYNC_RANK or step != DESYNC_STEP:  # the desync's bug
                    dist.all_reduce(logged)
                if rank == 0:
                    print(f"step {step} loss {logged.item() / world:.4f}", flush=True)
                prof.step()
    finally:  # the trace of a rank that fails is the one that matters
        prof.export_chrome_trace(path)
        subprocess.run(["gzip", "-9", "-n", "-f", path], check=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--world-size", type=int, help="ranks (default 2, or 4 with --version)")
    parser.add_argument("--steps", type=int, help="steps (default 5, or 8 with --version)")
    parser.add_argument("--version", choices=VERSIONS)
    parser.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    world = args.world_size or (4 if args.version else 2)
    steps = args.steps or (8 if args.version else 5)
    if args.rank_main:
        return version_rank_main(args.out, steps, args.version) if args.version else rank_main(args.out, steps)
    if args.version and (world <= RAISE_RANK or steps <= max(DESYNC_STEP, RAISE_STEP)):
        parser.error(f"--version needs at least {RAISE_RANK + 1} ranks and {max(DESYNC_STEP, RAISE_STEP) + 1} steps")
    os.makedirs(args.out, exist_ok=True)
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        command = [sys.executable, __file__, args.out, "--steps", str(steps), "--world-size", str(world)]
        command += ["--version", args.version] if args.version else []
        ranks.append(subprocess.Popen(command + ["--rank-main"], env=env))
    deadline = time.monotonic() + 300
    statuses = []
    for rank, r in enumerate(ranks):
        try:
            statuses.append(r.wait(timeout=max(0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:  # a hang that gloo's timeout did not end
            r.kill()
            statuses.append(r.wait())
        print(f"rank {rank} exit status {statuses[-1]}", file=sys.stderr)  # -N: killed by signal N
    return 1 if any(statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
