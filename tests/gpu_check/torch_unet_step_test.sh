#!/usr/bin/env bash
# Usage: torch_unet_step_test.sh SOURCE_DIR WORK_DIR
# gpu-check.sh's record step re-records shared/data/gpu's PyTorch runs with
# bench/trace/torch_unet_step.py on a GPU, where nothing can be fixed once it
# fails. Here, on the CPU: the usage errors are caught before any work; each
# --mistake runs and writes its step times and a torch.profiler export of four
# steps; sync_in_loop reads loss.item() once a step more than the healthy loop
# (Adam reads scalars of its own), and pageable_async no more.
set -uo pipefail
source_dir=$1 work=$2
script=$source_dir/bench/trace/torch_unet_step.py
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

python=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "SKIP: no python3 with PyTorch (Debian's python3-torch)"; exit 77; }

out=$("$python" "$script" --device cpu --steps 3 --kineto "$work/k.json" --out "$work/o.json" 2>&1); status=$?
[ "$status" = 2 ] && [[ $out == *"--steps 5 or more"* ]] || fail "--kineto with 3 steps: exit $status, '$out'"
out=$("$python" "$script" --device cpu --profiler --kineto "$work/k.json" --out "$work/o.json" 2>&1); status=$?
[ "$status" = 2 ] && [[ $out == *"give one"* ]] || fail "--profiler with --kineto: exit $status, '$out'"

# Prints the export's count of aten::item after checking both files.
check_run() {
  "$python" - "$@" <<'PY'
import json, sys
steps_file, kineto_file = sys.argv[1:]
steps = json.load(open(steps_file))
assert steps["steps"] == 5 and len(steps["step_ms"]) == 5, steps
trace = json.load(open(kineto_file))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
names = [e.get("name", "") for e in events]
profiled = sorted(n for n in names if n.startswith("ProfilerStep#"))
assert len(profiled) == 4, f"profiled steps {profiled}, want 4"
print(sum(n == "aten::item" for n in names))
PY
}

declare -A items
for mistake in none sync_in_loop pageable_async; do
  "$python" "$script" --device cpu --mistake "$mistake" --warmup 1 --steps 5 --kineto "$work/$mistake.kineto.json" \
    --out "$work/$mistake.json" > "$work/$mistake.log" 2>&1 || fail "$mistake: exit $?: $(tail -n 5 "$work/$mistake.log")"
  items[$mistake]=$(check_run "$work/$mistake.json" "$work/$mistake.kineto.json") || fail "$mistake: see above"
done
[ "${items[sync_in_loop]}" = $((items[none] + 4)) ] ||
  fail "sync_in_loop made ${items[sync_in_loop]} scalar reads in 4 steps, the healthy loop ${items[none]}"
[ "${items[pageable_async]}" = "${items[none]}" ] ||
  fail "pageable_async made ${items[pageable_async]} scalar reads in 4 steps, the healthy loop ${items[none]}"
echo "PASS"
