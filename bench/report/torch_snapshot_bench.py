#!/usr/bin/env python3
"""gpudiag report on PyTorch memory snapshots, against Python's own pickle.load
(what every Python viewer pays before it shows anything), and on a 2 GB one
against the bounds of 30 s and 4 GB resident.

Snapshots are made by tests/import/make_torch_snapshot.py (PyTorch's schema,
streamed, with a leak and an out-of-memory). Prints, for each size: seconds
and peak RSS of gpudiag report, seconds of pickle.load where asked, their
ratio, and the findings.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = os.path.join(HERE, "..", "..", "tests", "import", "make_torch_snapshot.py")


def timed(argv, stdout=subprocess.DEVNULL):
    """Seconds and peak resident bytes of a command, from wait4."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=stdout)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{argv[0]} failed: status {status}")
    return time.monotonic() - t0, usage.ru_maxrss * 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gpudiag", required=True)
    p.add_argument("--steps", type=int, nargs="+", default=[140_000, 3_000_000],
                   help="training steps of each snapshot (about 700 bytes of pickle a step)")
    p.add_argument("--pickle-load-up-to", type=int, default=200_000,
                   help="time Python's pickle.load for snapshots of at most this many steps (it needs ~20x the file)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for steps in a.steps:
            path = os.path.join(tmp, f"snapshot-{steps}.pickle")
            t0 = time.monotonic()
            subprocess.run([sys.executable, MAKE, path, "--steps", str(steps), "--leak-from", str(steps * 2 // 3),
                            "--oom", "--stream"], check=True)
            size = os.path.getsize(path)
            print(f"snapshot: {steps} steps, {size / 2**20:.0f} MiB, written in {time.monotonic() - t0:.0f} s")
            out = os.path.join(tmp, "report.json")
            with open(out, "w") as f:
                seconds, rss = timed([a.gpudiag, "report", "--json", "--fail-on", "none", path], stdout=f)
            with open(out) as f:
                report = json.load(f)
            line = f"  gpudiag report --json: {seconds:.1f} s, peak RSS {rss / 2**30:.2f} GiB"
            if steps <= a.pickle_load_up_to:
                load, load_rss = timed([sys.executable, "-c", f"import pickle; pickle.load(open({path!r}, 'rb'))"])
                line += (f"; python pickle.load: {load:.1f} s, peak RSS {load_rss / 2**30:.2f} GiB; "
                         f"gpudiag/pickle.load time {seconds / load:.2f}")
            print(line)
            for finding in report["findings"]:
                print(f"  {finding['rule']} {finding['message'][:110]}")
            os.remove(path)


if __name__ == "__main__":
    main()
