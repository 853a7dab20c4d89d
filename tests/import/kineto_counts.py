#!/usr/bin/env python3
"""Counts the events of a Kineto/Chrome trace with the standard library only,
independently of gpudiag's C++ importer, for kineto_import_test.cpp.
Prints one JSON object: kernels, memcpys, memsets, allocs, frees,
memory_counters, api_calls, syncs, pageable_htod, ooms, profiler_steps,
dataloader_batches."""
import gzip
import json
import sys

SYNC_CALLS = {"cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cuStreamSynchronize",
              "cudaEventSynchronize", "cuEventSynchronize", "cudaStreamWaitEvent", "cuStreamWaitEvent",
              "cuCtxSynchronize"}


def main(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    n = dict(kernels=0, memcpys=0, memsets=0, allocs=0, frees=0, memory_counters=0, api_calls=0, syncs=0,
             pageable_htod=0, ooms=0, profiler_steps=0, dataloader_batches=0)
    gpu_syncs = 0
    sync_calls = 0
    for e in events:
        if not isinstance(e, dict):
            continue
        ph, cat, name = e.get("ph"), e.get("cat"), e.get("name")
        args = e.get("args") or {}
        if ph in ("i", "I") and name == "[memory]":
            b = args.get("Bytes", 0)
            if b > 0:
                n["allocs"] += 1
            elif b < 0:
                n["frees"] += 1
            if "Total Allocated" in args or "Total Reserved" in args:
                n["memory_counters"] += 1
            continue
        if ph in ("i", "I") and name == "[OutOfMemory]":
            n["ooms"] += 1
            if "Total Allocated" in args or "Total Reserved" in args:
                n["memory_counters"] += 1
            continue
        if ph != "X":
            continue
        if cat in ("user_annotation", "Operator", "cpu_op") and name.startswith("ProfilerStep#"):
            n["profiler_steps"] += 1
        if cat in ("user_annotation", "Operator", "cpu_op") and name.startswith("enumerate(DataLoader)"):
            n["dataloader_batches"] += 1
        if cat in ("kernel", "Kernel"):
            n["kernels"] += 1
        elif cat in ("gpu_memcpy", "Memcpy"):
            n["memcpys"] += 1
            if "HtoD" in name and "(Pageable" in name:
                n["pageable_htod"] += 1
        elif cat in ("gpu_memset", "Memset"):
            n["memsets"] += 1
        elif cat == "cuda_sync":
            gpu_syncs += 1
        elif cat in ("cuda_runtime", "Runtime", "cuda_driver"):
            n["api_calls"] += 1
            if name in SYNC_CALLS:
                sync_calls += 1
    n["syncs"] = gpu_syncs if gpu_syncs else sync_calls
    print(json.dumps(n))


if __name__ == "__main__":
    main(sys.argv[1])
