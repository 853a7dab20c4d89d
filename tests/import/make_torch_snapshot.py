#!/usr/bin/env python3
"""Writes a memory snapshot in the schema of torch.cuda.memory._dump_snapshot
(PyTorch 2.1 on), as pickle.dump writes it, for tests and the scale benchmark:
a training loop on cuda:0 whose activations are allocated and freed every
step, optionally a call site that keeps memory every step from a given step
on (a leak), and an out-of-memory at the end.

Like PyTorch, it shares one frames list per distinct traceback, so the
pickle refers to them by memo as real snapshots do. It needs no torch.
"""
import argparse
import pickle

MiB = 1 << 20
SEGMENT = 20 * MiB


def frames(*sites):
    # PyTorch lists frames innermost first: the allocation's Python line, then its callers.
    return [{"filename": f, "line": l, "name": n} for (f, l, n) in sites]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--leak-from", type=int, default=-1, help="step from which train.py:57 keeps 1 MiB a step")
    p.add_argument("--oom", action="store_true", help="end with an out-of-memory")
    p.add_argument("--oom-bytes", type=int, default=4 << 30, help="what the failed request asked for")
    p.add_argument("--no-time", action="store_true", help="no time_us, as before PyTorch 2.1")
    p.add_argument("--protocol", type=int, default=4)
    a = p.parse_args()

    train = ("train.py", 40, "train_step")
    main_frame = ("train.py", 90, "main")
    sites = {
        "conv": frames(("model.py", 21, "forward"), train, main_frame),
        "act": frames(("model.py", 22, "forward"), train, main_frame),
        "grad": frames(("torch/autograd/graph.py", 768, "_engine_run_backward"), ("train.py", 44, "train_step"),
                       main_frame),
        "leak": frames(("train.py", 57, "train_step"), main_frame),
        "params": frames(("model.py", 12, "__init__"), ("train.py", 80, "main")),
    }
    trace = []
    live = {}  # addr -> (size, frames)
    segments = []  # [address, size]
    state = {"bump": 0x7F0000000000, "end": 0x7F0000000000, "t": 1_000_000}

    def entry(action, addr, size, fr, **extra):
        e = {"action": action, "addr": addr, "frames": fr, "size": size, "stream": 0}
        if not a.no_time:
            e["time_us"] = state["t"]
        e.update(extra)
        trace.append(e)
        state["t"] += 7

    def alloc(size, fr):
        if state["bump"] + size > state["end"]:
            seg = max(SEGMENT, size)
            base = state["end"] if segments else state["bump"]
            segments.append([base, seg])
            entry("segment_alloc", base, seg, fr)
            state["bump"], state["end"] = base, base + seg
        addr = state["bump"]
        state["bump"] += size
        entry("alloc", addr, size, fr)
        live[addr] = (size, fr)
        return addr

    def free(addr):
        size, fr = live.pop(addr)
        entry("free_requested", addr, size, fr)
        entry("free_completed", addr, size, fr)

    for _ in range(4):
        alloc(2 * MiB, sites["params"])
    for step in range(a.steps):
        state["t"] = 2_000_000 + step * 10_000
        tmp = [alloc(MiB, sites["conv"]), alloc(MiB, sites["act"]), alloc(512 * 1024, sites["grad"])]
        if 0 <= a.leak_from <= step:
            alloc(MiB, sites["leak"])
        for addr in tmp:
            free(addr)
    if a.oom:
        e = {"action": "oom", "device_free": 100 * MiB, "frames": sites["conv"], "size": a.oom_bytes, "stream": 0}
        if not a.no_time:
            e["time_us"] = state["t"]
        trace.append(e)

    out_segments = []
    addrs = sorted(live)
    i = 0
    for base, size in segments:
        blocks, addr = [], base
        while i < len(addrs) and addrs[i] < base + size:
            b = addrs[i]
            i += 1
            if b > addr:
                blocks.append({"address": addr, "size": b - addr, "requested_size": 0, "state": "inactive", "frames": []})
            bsize, fr = live[b]
            blocks.append({"address": b, "size": bsize, "requested_size": bsize, "state": "active_allocated",
                           "frames": fr})
            addr = b + bsize
        if addr < base + size:
            blocks.append({"address": addr, "size": base + size - addr, "requested_size": 0, "state": "inactive",
                           "frames": []})
        allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        out_segments.append({"device": 0, "address": base, "total_size": size, "allocated_size": allocated,
                             "active_size": allocated, "requested_size": allocated, "stream": 0,
                             "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                             "frames": [], "blocks": blocks})
    snapshot = {"segments": out_segments, "device_traces": [trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                       "expandable_segments": False}}
    with open(a.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=a.protocol)


if __name__ == "__main__":
    main()
