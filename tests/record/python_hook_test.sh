#!/usr/bin/env bash
# record/python/sitecustomize.py, the startup hook `gpudiag trace` puts first
# on PYTHONPATH: with a stand-in torch package (python_hook/stub), that it
# starts PyTorch's allocator history only once the program initialised CUDA,
# writes it beside the trace at exit (not from a forked child), changes
# nothing else the program sees, runs the program's own sitecustomize, and
# does nothing when off, outside gpudiag trace or with an older PyTorch. With
# Debian's CPU PyTorch, under gpudiag trace itself: the program runs as it
# would, and nothing is written without CUDA.
# Usage: python_hook_test.sh <hook folder> <gpudiag> <scratch folder>
set -uo pipefail
hook=$1 gpudiag=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)/python_hook
rm -rf "$work" && mkdir -p "$work"
python=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Runs program.py with the hook, the program's own sitecustomize and the
# stand-in torch; its output in $work/out.
run() {
  env PYTHONPATH="$hook:$here/user:$here/stub" GPUDIAG_TRACE="$work/t.%p.gdtrace" "$@" \
    "$python" "$here/program.py" ${ARGS:-} > "$work/out" 2>&1
}
histories() { ls "$work"/*.torch-memory.json 2>/dev/null | wc -l; }

run
status=$?
[ "$status" -eq 0 ] || fail "the program exited $status: $(cat "$work/out")"
grep -q "the program's own sitecustomize ran" "$work/out" || fail "the program's sitecustomize did not run"
grep -q "recording before init: 0" "$work/out" || fail "recording began before CUDA was initialised"
grep -q "recording after init: \[{'enabled': 'all', 'context': 'all', 'stacks': 'python', 'max_entries': 250000}\]" \
  "$work/out" || fail "recording did not begin at CUDA's initialisation: $(cat "$work/out")"
grep -q "loader: SourceFileLoader" "$work/out" || fail "torch was left with another loader: $(cat "$work/out")"
[ "$(histories)" -eq 1 ] || fail "$(histories) histories written, not one"
"$python" - "$work"/*.torch-memory.json <<'PY' || fail "the history is not what the snapshot held"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "gpudiag-torch-memory" and doc["version"] == 1, doc
assert isinstance(doc["clock"]["realtime_ns"], int) and isinstance(doc["clock"]["monotonic_ns"], int), doc
assert doc["frames"] == [["train.py", 12, "step"], ["train.py", 90, "main"]], doc
assert doc["stacks"] == [[0, 1], []], doc
assert doc["device_traces"] == [[{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 7, "stack": 0},
                                 {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0, "time_us": 9, "stack": 1}]], doc
assert sys.argv[1].endswith(f".{doc['pid']}.gdtrace.torch-memory.json"), sys.argv[1]
PY
rm -f "$work"/*.torch-memory.json

ARGS=fork run
[ "$(histories)" -eq 1 ] || fail "a forked child wrote a history of its own ($(histories) written)"
rm -f "$work"/*.torch-memory.json

for case in "GPUDIAG_TORCH_HISTORY=off" "STUB_HISTORY=old" "STUB_LAZY_CALL=raises" "GPUDIAG_TRACE="; do
  run "$case"
  status=$?
  [ "$status" -eq 0 ] || fail "with $case the program exited $status: $(cat "$work/out")"
  [ "$(histories)" -eq 0 ] || fail "with $case a history was written"
  grep -q "the program's own sitecustomize ran" "$work/out" || fail "with $case the program's sitecustomize did not run"
done
ARGS=no-torch run
[ "$(histories)" -eq 0 ] || fail "a program without torch got a history"

# An out-of-memory: the snapshot of that moment, with the device's capacity,
# is written beside the trace before the program sees its error, which stays
# the program's own (a traceback, exit 1). Without the observer in the build,
# or where it cannot be written, the program fails as it would have.
oom_snapshots() { ls "$work"/*.torch-oom.pickle 2>/dev/null | wc -l; }
ARGS=oom run
status=$?
[ "$status" -eq 1 ] || fail "the out-of-memory made the program exit $status, not its own 1: $(cat "$work/out")"
grep -q "OutOfMemoryError: CUDA out of memory" "$work/out" || fail "the program's own error changed: $(cat "$work/out")"
grep -q "gpudiag" "$work/out" && fail "the hook said something at the out-of-memory: $(cat "$work/out")"
[ "$(oom_snapshots)" -eq 1 ] || fail "$(oom_snapshots) snapshots at the out-of-memory written, not one"
"$python" - "$work"/*.torch-oom.pickle <<'PY' || fail "the snapshot at the out-of-memory is not what the allocator held"
import pickle, sys
doc = pickle.load(open(sys.argv[1], "rb"))
assert doc["gpudiag_out_of_memory"] == {"device": 0, "requested": 4 << 30, "free": 100 << 20, "capacity": 80 << 30,
                                        "limit": 40 << 30}, doc
assert doc["device_traces"][0][1]["frames"][0] == {"filename": "train.py", "line": 12, "name": "step"}, doc
PY
rm -f "$work"/*.torch-oom.pickle "$work"/*.torch-memory.json
ARGS=oom run STUB_OOM_OBSERVER=missing
status=$?
[ "$status" -eq 1 ] || fail "without the observer the program exited $status"
[ "$(oom_snapshots)" -eq 0 ] || fail "a snapshot was written without the observer"
rm -f "$work"/*.torch-memory.json

[ "$(oom_snapshots)" -eq 0 ] || fail "a snapshot was written without the observer"
rm -f "$work"/*.torch-memory.json
env PYTHONPATH="$hook:$here/user:$here/stub" GPUDIAG_TRACE="$work/gone/t.%p.gdtrace" \
  "$python" "$here/program.py" oom > "$work/out" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "an unwritable snapshot made the program exit $status"
grep -q "gpudiag: PyTorch's allocator at the out-of-memory was not written" "$work/out" ||
  fail "an unwritable snapshot was not said: $(cat "$work/out")"

# A history that cannot be written is said in one line; the program's exit status stays.
env PYTHONPATH="$hook:$here/user:$here/stub" GPUDIAG_TRACE="$work/gone/t.%p.gdtrace" \
  "$python" "$here/program.py" > "$work/out" 2>&1
status=$?
[ "$status" -eq 0 ] || fail "an unwritable history made the program exit $status"
grep -q "gpudiag: PyTorch's allocator history was not written" "$work/out" || fail "an unwritable history was not said"
grep -q "Traceback" "$work/out" && fail "an unwritable history gave a traceback: $(cat "$work/out")"

# Debian's PyTorch (CPU only) under gpudiag trace.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  "$gpudiag" trace -o "$work/real.gdtrace" -- /usr/bin/python3 -c \
    'import sys, torch; print(sys.modules["gpudiag_torch_history"].__file__); print(torch.ones(3).sum().item())' \
    > "$work/real.out" 2>&1
  status=$?
  [ "$status" -eq 0 ] || fail "gpudiag trace of a CPU PyTorch program exited $status: $(cat "$work/real.out")"
  grep -qx "3.0" "$work/real.out" || fail "the program's output changed: $(cat "$work/real.out")"
  grep -q "^$hook/gpudiag_torch_history.py" "$work/real.out" || fail "gpudiag trace did not put the hook first on PYTHONPATH"
  [ "$(histories)" -eq 0 ] || fail "a program that never used CUDA got a history"
else
  echo "no PyTorch for /usr/bin/python3: the gpudiag trace part is not checked"
fi
[ "$failures" -eq 0 ] || exit 1
echo "python hook: every case as expected"
