#!/usr/bin/env python3
"""The facts of a DDP job's per-rank Kineto traces (DIR/rank<N>.kineto.json.gz,
as make_ddp_kineto.py --version writes them), read with the standard library
only, for the ground truth in each data directory's README.

Usage: ddp_job_facts.py DIR [--world-size N]
Times are milliseconds after the job's start: the earliest event of any rank's
trace (the ranks ran on one host, so their clocks agree)."""
import argparse
import collections
import gzip
import json
import os

BUCKET = [[3081]]  # the DDP bucket's dims: every parameter of the UNet block


def load(path):
    with open(path, "rb") as f:
        doc = json.loads(gzip.decompress(f.read()))
    return doc, [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def step_of(steps, e):
    inside = [s for s in steps if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
    return int(inside[-1]["name"].split("#")[1]) if inside else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir")
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()
    traces = {}
    for rank in range(args.world_size):
        path = os.path.join(args.dir, f"rank{rank}.kineto.json.gz")
        if os.path.exists(path):
            traces[rank] = load(path)
    if not traces:
        parser.error(f"no rank<N>.kineto.json.gz in {args.dir}")
    t0 = min(e["ts"] for _, events in traces.values() for e in events)
    print(f"job start: ts {t0:.3f} us")

    def ms(ts):
        return (ts - t0) / 1e3

    launched = collections.defaultdict(dict)  # step -> rank -> when it launched the bucket's all-reduce
    for rank in range(args.world_size):
        if rank not in traces:
            print(f"rank {rank}: no trace")
            continue
        doc, events = traces[rank]
        info = doc["distributedInfo"]
        steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        colls = sorted((e for e in events if e["name"].startswith(("gloo:", "c10d::"))), key=lambda e: e["ts"])
        loads = [e["dur"] / 1e3 for e in events if e["name"].startswith("enumerate(DataLoader)")]
        end = max(e["ts"] + e["dur"] for e in events)
        print(f"rank {rank}: distributedInfo rank {info['rank']} of {info['world_size']} ({info['backend']})")
        print(f"  ProfilerStep#{step_of(steps, steps[0])}..#{step_of(steps, steps[-1])} ({len(steps)} ranges); "
              f"trace ends at {ms(end):.1f} ms (ts {end:.3f} us)")
        counts = collections.Counter(e["name"] for e in colls)
        print("  counts: " + ", ".join(f"{name} {n}" for name, n in sorted(counts.items())))
        print(f"  DataLoader __next__: mean {sum(loads) / len(loads):.1f} ms over {len(loads)} calls")
        for e in colls:  # DDP's reducer launches the bucket's all-reduce once the rank's gradients are ready
            if e["name"] == "c10d::allreduce_" and e["args"].get("Input Dims", [None])[0] == BUCKET:
                launched[step_of(steps, e)][rank] = ms(e["ts"])
        waits = [e["dur"] / 1e3 for e in colls if e["name"].startswith("gloo:all_reduce")]
        print(f"  gloo:all_reduce: {sum(waits):.1f} ms in all")
        lasts = [[e for e in colls if e["name"].startswith(prefix)][-1:] for prefix in ("gloo:", "c10d::")]
        for e in lasts[0] + lasts[1]:
            extra = f", finished {e['args']['finished']}" if "finished" in e["args"] else ""
            print(f"  last {e['name']}: step {step_of(steps, e)}, Input Dims {e['args'].get('Input Dims')}, "
                  f"{ms(e['ts']):.1f} ms + {e['dur'] / 1e3:.1f} ms, tid {e['tid']}{extra}")
    print("the bucket's all-reduce: the rank launching it last per step (and how long after the first)")
    for step in sorted(launched):
        times = launched[step]
        last = max(times, key=times.get)
        print(f"  step {step}: rank {last} (+{times[last] - min(times.values()):.1f} ms), "
              f"launched by ranks {sorted(times)}")


if __name__ == "__main__":
    main()
