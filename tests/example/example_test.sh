#!/usr/bin/env bash
# Clones the source tree's committed state into a fresh folder, runs
# `bash scripts/example.sh` there, and checks that it exits 0 and that both
# tools named a real bug of the samples: gpulint a finding with its rule, and
# the traced buggy sample its GD003 with the symptom the sample printed.
set -uo pipefail
source_dir=$1 build_dir=$2 work=$3
if ! git -C "$source_dir" rev-parse --verify -q HEAD >/dev/null; then
  echo "SKIP: $source_dir is not a git checkout with a commit to clone"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
git clone -q "$source_dir" "$work/gpudiag" || exit 1
log="$work/example.log"
# With the source tree as ccache's base folder and its build's cache, the
# clone's compiles are the ones that build just made (scripts/build.sh).
export CCACHE_BASEDIR=$source_dir CCACHE_DIR=${CCACHE_DIR:-$build_dir/ccache}
(cd "$work/gpudiag" && bash scripts/example.sh) >"$log" 2>&1
status=$?
tail -n 60 "$log"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" -eq 0 ] || fail "scripts/example.sh exited $status"
grep -q "symptom: .* predictions were read before the copy landed" "$log" || fail "the buggy sample showed no symptom"
grep -Eq "error +GD003 unsynced-transfer" "$log" || fail "the trace's report did not name GD003"
if grep -q "gpulint was not built" "$log"; then
  echo "gpulint was not built here (no clang/LLVM 19): its part is not checked"
else
  grep -Eq "warning: .*\[GD0[0-9][0-9] [a-z0-9-]+\]" "$log" || fail "gpulint reported nothing on samples/"
fi
grep -q "device -1" "$log" && fail "a report called the host \"device -1\""
echo "scripts/example.sh: exit 0, findings from both tools"
