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
  if "$gpudiag" report --fail-on warning "$3" > "$3.txt" 2>&1; then
    echo "ok    $1 $2" | tee -a "$out/summary.txt"
  else
    echo "WARN  $1 $2 (see $(basename "$3").txt)" | tee -a "$out/summary.txt"
    failures=$((failures + 1))
  fi
}
for program in "$here"/*.py; do
  name=$(basename "$program" .py)
  [ "$name" = healthy_loop ] && continue
  if ! "$gpudiag" trace -o "$out/$name.gdtrace" -- "$python" "$program" --steps 40 > "$out/$name.traced.out" 2>&1; then
    echo "FAIL  $name traced: exit $? (see $name.traced.out)" | tee -a "$out/summary.txt"; failures=$((failures + 1))
  else
    judge "$name" traced "$out/$name.gdtrace"
  fi
  if ! "$python" "$program" --steps 12 --profile "$out/$name.kineto.json" > "$out/$name.profiled.out" 2>&1; then
    echo "FAIL  $name profiled: exit $? (see $name.profiled.out)" | tee -a "$out/summary.txt"; failures=$((failures + 1))
  else
    judge "$name" profiled "$out/$name.kineto.json"
  fi
done
[ "$failures" -eq 0 ]
