#!/usr/bin/env python3
"""HTA's own per-rank breakdown of a folder of Kineto traces (one file per
rank), written as a CSV for temporal_breakdown_test to compare against.

HTA is Holistic Trace Analysis (facebookresearch/HolisticTraceAnalysis, MIT),
from PyPI: the numbers in tests/import/data/hta/ were made with
HolisticTraceAnalysis 0.5.0 on Python 3.11, as

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install HolisticTraceAnalysis==0.5.0
    /tmp/hta/bin/python tests/import/hta_reference.py TRACE_DIR OUT.csv

Columns (times in microseconds, HTA's unit; shares in percent):
- idle/compute/non_compute/kernel_time_us and their _pctg: straight from
  TraceAnalysis.get_temporal_breakdown();
- comp_comm_overlap_pctg: straight from get_comm_comp_overlap();
- window_begin_us/window_end_us, comm_us, memory_us, exposed_comm_us: from
  the same per-rank DataFrames HTA analyses (its GPU events, stream != -1,
  after its own filtering), with HTA's get_kernel_type() and
  merge_kernel_intervals(), so that they are HTA's classification and
  window too. window times are HTA's: microseconds from the earliest event
  of all ranks. exposed_comm_us is comm_us times (1 - overlap), from HTA's
  overlap percentage, which it rounds to two decimals.
"""
import argparse
import csv
from importlib.metadata import version

import pandas as pd
from hta.trace_analysis import TraceAnalysis
from hta.utils.utils import KernelType, get_kernel_type, merge_kernel_intervals


def union_us(gpu, kind):
    merged = merge_kernel_intervals(gpu[gpu["kernel_type"].eq(kind)].copy())
    return int(merged["end"].sum() - merged["ts"].sum()) if len(merged) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace_dir")
    parser.add_argument("out_csv")
    args = parser.parse_args()

    analysis = TraceAnalysis(trace_dir=args.trace_dir)
    temporal = analysis.get_temporal_breakdown(visualize=False).set_index("rank")
    overlap = analysis.get_comm_comp_overlap(visualize=False).set_index("rank")
    sym = analysis.t.symbol_table.get_sym_table()

    rows = []
    for rank, df in sorted(analysis.t.traces.items()):
        gpu = df[df["stream"].ne(-1)].copy()
        gpu["kernel_type"] = gpu["name"].apply(lambda n: get_kernel_type(sym[n]))
        comm = union_us(gpu, KernelType.COMMUNICATION.name)
        t = temporal.loc[rank]
        o = float(overlap.loc[rank, "comp_comm_overlap_pctg"])
        rows.append({
            "rank": rank,
            "file": analysis.t.trace_files[rank].rsplit("/", 1)[-1],
            "window_begin_us": int(gpu["ts"].min()),
            "window_end_us": int((gpu["ts"] + gpu["dur"]).max()),
            "kernel_time_us": int(t["kernel_time(us)"]),
            "idle_time_us": int(t["idle_time(us)"]),
            "compute_time_us": int(t["compute_time(us)"]),
            "non_compute_time_us": int(t["non_compute_time(us)"]),
            "idle_time_pctg": t["idle_time_pctg"],
            "compute_time_pctg": t["compute_time_pctg"],
            "non_compute_time_pctg": t["non_compute_time_pctg"],
            "comm_us": comm,
            "memory_us": union_us(gpu, KernelType.MEMORY.name),
            "comp_comm_overlap_pctg": o,
            "exposed_comm_us": round(comm * (1 - o / 100)) if not pd.isna(o) else comm,
            "hta_version": version("HolisticTraceAnalysis"),
        })
    with open(args.out_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
