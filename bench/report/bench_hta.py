#!/usr/bin/env python3
"""time(HTA temporal breakdown) / time(gpudiag report --json) on the same real
Kineto trace, one run each (after one warm-up of the file cache). Goal >= 20.

HTA (PyPI HolisticTraceAnalysis) is installed into a venv under the build
directory the first time; when that fails (no network, no wheel) the
comparison is skipped with the reason. Both tools parse the trace from disk
and compute idle/compute/non-compute time, so the ratio compares like with like.
The shares printed beside HTA's are over the window gpudiag's report names:
the training loop where the trace shows profiler steps, HTA's whole trace.
"""
import argparse
import json
import resource
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "..", "shared", "data", "traces", "v100-resnet50.trace.json.gz")

HTA_SCRIPT = r"""
import sys, time, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
df = analyzer.get_temporal_breakdown(visualize=False)
print("HTA_SECONDS", time.perf_counter() - t0)
print(df.to_string())
"""


def cpu_children():
    """User + system CPU seconds of finished children: robust when others load the machine."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ensure_hta(venv):
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python):
        if subprocess.run([python, "-c", "import hta"], capture_output=True).returncode == 0:
            return python
    else:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    r = subprocess.run([python, "-m", "pip", "install", "-q", "HolisticTraceAnalysis"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "pip failed"
    return python


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpudiag", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    a = ap.parse_args()
    trace = os.path.abspath(a.trace)
    if not os.path.exists(trace):
        print(f"bench_hta: skipped: no trace at {trace}")
        return 0
    python = ensure_hta(a.venv)
    if isinstance(python, tuple) or python is None:
        print(f"bench_hta: skipped: HolisticTraceAnalysis could not be installed ({python[1] if python else ''})")
        return 0
    # HTA reads every trace in a folder (one per rank).
    folder = tempfile.mkdtemp(prefix="hta-bench-")
    name = os.path.basename(trace)
    shutil.copy(trace, os.path.join(folder, name))
    try:
        subprocess.run([a.gpudiag, "report", "--json", "--fail-on", "none", trace], capture_output=True)  # warm cache
        c0 = cpu_children()
        t0 = time.perf_counter()
        ours = subprocess.run([a.gpudiag, "report", "--json", "--fail-on", "none", trace], capture_output=True, text=True)
        ours_s = time.perf_counter() - t0
        ours_cpu = cpu_children() - c0
        if ours.returncode != 0:
            print("bench_hta: gpudiag report failed:", ours.stderr)
            return 1
        c0 = cpu_children()
        t0 = time.perf_counter()
        hta = subprocess.run([python, "-c", HTA_SCRIPT, folder], capture_output=True, text=True)
        hta_s = time.perf_counter() - t0
        hta_cpu = cpu_children() - c0
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if hta.returncode != 0:
        print("bench_hta: skipped: HTA failed on this trace:", hta.stderr.strip().splitlines()[-1:])
        return 0
    g = json.loads(ours.stdout)["gpu_time"][0]
    print(f"trace: {name}")
    pct = lambda v: 100.0 * v / g["total_ns"] if g["total_ns"] else 0.0
    print(f"gpudiag: idle {pct(g['idle_ns']):.2f}%, computation {pct(g['computation_ns']):.2f}%, "
          f"memcpy/memset (non-compute) {pct(g['exposed_memcpy_ns']):.2f}% of {g['total_ns'] / 1e3:.0f} us "
          f"({g.get('window', 'whole run')})")
    print("HTA temporal breakdown:")
    print("\n".join(l for l in hta.stdout.splitlines() if not l.startswith("HTA_SECONDS")))
    print(f"gpudiag report --json: {ours_s:.3f} s wall, {ours_cpu:.3f} s CPU "
          "(whole process: load, every analysis and detector, JSON)")
    print(f"HTA get_temporal_breakdown: {hta_s:.3f} s wall, {hta_cpu:.3f} s CPU (whole process: import, parse, breakdown)")
    print(f"ratio HTA / gpudiag: wall {hta_s / ours_s:.1f}x, CPU {hta_cpu / max(ours_cpu, 1e-9):.1f}x (goal >= 20x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
