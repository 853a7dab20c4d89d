#!/usr/bin/env bash
# Every healthy PyTorch sample on a GPU, in one go: each traced whole with
# `gpudiag trace` and profiled with torch.profiler, and each report must
# hold no warning and no error. Writes the traces and reports into OUTDIR
# and a line per run to OUTDIR/summary.txt; exits 1 when any report warns.
# Usage: run_on_gpu.sh GPUDIAG OUTDIR [PYTHON]   (about 5 minutes on an H100)
set -uo pipefail
gpudiag=$1 out=$2 python=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)' || {
  echo "no CUDA device available to PyTorch"; exit 3; }
failures=0
: > "$out/summary.txt"
judge() {  # name, what, report file
  "$gpudiag" report --fail-on warning "$3" > "$3.txt" 2>&1
  local status=$?
  case $status in
    0) echo "ok    $1 $2" | tee -a "$out/summary.txt" ;;
    1) echo "WARN  $1 $2 (see $(basename "$3").txt)" | tee -a "$out/summary.txt"; failures=$((failures + 1)) ;;
    *) echo "FAIL  $1 $2: the report exited $status (see $(basename "$3").txt)" | tee -a "$out/summary.txt"
       failures=$((failures + 1)) ;;
  esac
}
# A program's run: its status, said when it is not 0.
ran() {  # name, what, output file, command...
  local name=$1 what=$2 log=$3
  shift 3
  "$@" > "$log" 2>&1
  local status=$?
  [ "$status" -eq 0 ] && return 0
  echo "FAIL  $name $what: exit $status (see $(basename "$log"))" | tee -a "$out/summary.txt"
  failures=$((failures + 1))
  return 1
}
for program in "$here"/*.py; do
  name=$(basename "$program" .py)
  [ "$name" = healthy_loop ] && continue
  # Epochs of 10 steps traced, and of 5 profiled, so that the profiled
  # steps 3-6 hold an epoch's end (validation, checkpoint).
  ran "$name" traced "$out/$name.traced.out" \
    "$gpudiag" trace -o "$out/$name.gdtrace" -- "$python" "$program" --steps 40 --epoch 10 &&
    judge "$name" traced "$out/$name.gdtrace"
  ran "$name" profiled "$out/$name.profiled.out" \
    "$python" "$program" --steps 12 --epoch 5 --profile "$out/$name.kineto.json" &&
    judge "$name" profiled "$out/$name.kineto.json"
done
[ "$failures" -eq 0 ]
