#!/usr/bin/env bash
# The per-part cost of `gpudiag trace` on a GPU, in one prepared call: the
# callback bodies on the CPU (trace_bench callbacks), then the PyTorch UNet
# step untraced, fully traced and with each part off in turn (stacks, copy
# guard, kernel arguments, runtime callbacks), interleaved per round. About
# 9 runs of ~10 s per round on an H200.
# Usage: bench/trace/gpu_parts.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-4}
"$build/bench/trace/trace_bench" callbacks
"$build/bench/trace/trace_bench" gpu "$rounds" full stacks guard args deny analysed nocallbacks
