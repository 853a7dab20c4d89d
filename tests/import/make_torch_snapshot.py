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
import struct

MiB = 1 << 20
SEGMENT = 20 * MiB


def frames(*sites):
    # PyTorch lists frames innermost first: the allocation's Python line, then its callers.
    return [{"filename": f, "line": l, "name": n} for (f, l, n) in sites]


class Run:
    """The allocator's history of a training loop, entry by entry, and its state at the end."""

    def __init__(self, a):
        self.a = a
        train = ("train.py", 40, "train_step")
        main_frame = ("train.py", 90, "main")
        self.sites = {
            "conv": frames(("model.py", 21, "forward"), train, main_frame),
            "act": frames(("model.py", 22, "forward"), train, main_frame),
            "grad": frames(("torch/autograd/graph.py", 768, "_engine_run_backward"), ("train.py", 44, "train_step"),
                           main_frame),
            "leak": frames(("train.py", 57, "train_step"), main_frame),
            "params": frames(("model.py", 12, "__init__"), ("train.py", 80, "main")),
        }
        self.live = {}  # addr -> (size, frames)
        self.segments = []  # [address, size]

    def entries(self):
        a, sites = self.a, self.sites
        self.live.clear()
        self.segments.clear()
        state = {"bump": 0x7F0000000000, "end": 0x7F0000000000, "t": 1_000_000}

        def entry(action, addr, size, fr, **extra):
            e = {"action": action, "addr": addr, "frames": fr, "size": size, "stream": 0}
            if not a.no_time:
                e["time_us"] = state["t"]
            e.update(extra)
            state["t"] += 7
            return e

        def alloc(size, fr):
            if state["bump"] + size > state["end"]:
                seg = max(SEGMENT, size)
                base = state["end"] if self.segments else state["bump"]
                self.segments.append([base, seg])
                yield entry("segment_alloc", base, seg, fr)
                state["bump"], state["end"] = base, base + seg
            addr = state["bump"]
            state["bump"] += size
            yield entry("alloc", addr, size, fr)
            self.live[addr] = (size, fr)

        def free(addr):
            size, fr = self.live.pop(addr)
            yield entry("free_requested", addr, size, fr)
            yield entry("free_completed", addr, size, fr)

        for _ in range(4):
            yield from alloc(2 * MiB, sites["params"])
        for step in range(a.steps):
            state["t"] = 2_000_000 + step * 10_000
            tmp = []
            for size, site in ((MiB, "conv"), (MiB, "act"), (512 * 1024, "grad")):
                yield from alloc(size, sites[site])
                tmp.append(state["bump"] - size)
            if 0 <= a.leak_from <= step:
                yield from alloc(MiB, sites["leak"])
            for addr in tmp:
                yield from free(addr)
        if a.oom:
            e = {"action": "oom", "device_free": 100 * MiB, "frames": sites["conv"], "size": a.oom_bytes, "stream": 0}
            if not a.no_time:
                e["time_us"] = state["t"]
            yield e

    def final_segments(self):
        out_segments = []
        addrs = sorted(self.live)
        i = 0
        for base, size in self.segments:
            blocks, addr = [], base
            while i < len(addrs) and addrs[i] < base + size:
                b = addrs[i]
                i += 1
                if b > addr:
                    blocks.append({"address": addr, "size": b - addr, "requested_size": 0, "state": "inactive",
                                   "frames": []})
                bsize, fr = self.live[b]
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
        return out_segments


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False}


class StreamWriter:
    """pickle.dump's protocol-4 opcodes written an entry at a time, for snapshots too big to build in memory.
    Like pickle.dump, it stores every dict, list, tuple and string in the memo as it writes it, and refers to a
    string or a frames list written before by its memo entry."""

    def __init__(self, f):
        self.f = f
        self.memo = {}  # str, or id() of a frames list -> memo index
        self.count = 0  # entries in the memo, as MEMOIZE numbers them

    def memoize(self, key=None):
        if key is not None:
            self.memo[key] = self.count
        self.count += 1
        return b"\x94"

    def get(self, key):
        return b"j" + struct.pack("<I", self.memo[key])

    def text(self, s):
        if s in self.memo:
            return self.get(s)
        b = s.encode()
        return b"X" + struct.pack("<I", len(b)) + b + self.memoize(s)

    @staticmethod
    def integer(v):
        if 0 <= v < 256:
            return b"K" + bytes([v])
        if 0 <= v < 65536:
            return b"M" + struct.pack("<H", v)
        if -(2 ** 31) <= v < 2 ** 31:
            return b"J" + struct.pack("<i", v)
        n = (v.bit_length() + 8) // 8
        return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, bool):
            return b"\x88" if v else b"\x89"
        if isinstance(v, int):
            return self.integer(v)
        if v is None:
            return b"N"
        if isinstance(v, tuple):
            return b"(" + b"".join(self.value(x) for x in v) + b"t" + self.memoize()
        if isinstance(v, list):
            if id(v) in self.memo:
                return self.get(id(v))
            head = b"]" + self.memoize(id(v) if v and isinstance(v[0], dict) and "filename" in v[0] else None)
            return head + (b"(" + b"".join(self.value(x) for x in v) + b"e" if v else b"")
        if isinstance(v, dict):
            head = b"}" + self.memoize()
            return head + b"(" + b"".join(self.value(k) + self.value(x) for k, x in v.items()) + b"u"
        raise TypeError(type(v))

    def write(self, run):
        # The segments come first in a snapshot, but are the state at its end: the history is run twice.
        for _ in run.entries():
            pass
        self.f.write(b"\x80\x04" + b"}" + self.memoize() + b"(" + self.text("segments"))
        self.f.write(self.value(run.final_segments()))
        self.f.write(self.text("device_traces") + b"]" + self.memoize() + b"(" + b"]" + self.memoize() + b"(")
        batch = []
        for e in run.entries():
            batch.append(self.value(e))
            if len(batch) == 1000:
                self.f.write(b"".join(batch) + b"e(")
                batch.clear()
        self.f.write(b"".join(batch) + b"ee" + self.text("allocator_settings") + self.value(SETTINGS) + b"u.")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--leak-from", type=int, default=-1, help="step from which train.py:57 keeps 1 MiB a step")
    p.add_argument("--oom", action="store_true", help="end with an out-of-memory")
    p.add_argument("--oom-bytes", type=int, default=4 << 30, help="what the failed request asked for")
    p.add_argument("--no-time", action="store_true", help="no time_us, as before PyTorch 2.1")
    p.add_argument("--protocol", type=int, default=4)
    p.add_argument("--stream", action="store_true",
                   help="write entry by entry (protocol 4), for snapshots of gigabytes; the same snapshot otherwise")
    a = p.parse_args()
    run = Run(a)
    with open(a.out, "wb") as f:
        if a.stream:
            StreamWriter(f).write(run)
            return
        trace = list(run.entries())
        snapshot = {"segments": run.final_segments(), "device_traces": [trace], "allocator_settings": SETTINGS}
        pickle.dump(snapshot, f, protocol=a.protocol)


if __name__ == "__main__":
    main()
