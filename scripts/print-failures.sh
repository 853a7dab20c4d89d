#!/usr/bin/env bash
# Prints the end of each failed test's output from a ctest build folder's
# last run:  bash scripts/print-failures.sh BUILD_DIR [LINES]
# ctest prints a failure where it happens, deep inside a long log; CI keeps
# only a log's end, so the scripts that run ctest print this after it.
set -euo pipefail
log="${1:?usage: bash scripts/print-failures.sh BUILD_DIR [LINES]}/Testing/Temporary/LastTest.log"
lines=${2:-60}
[[ -r "$log" ]] || { echo "print-failures: no $log" >&2; exit 0; }
awk -v keep="$lines" '
  / Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); n = 0; inside = 0; next }
  /^Output:$/ { inside = 1; getline; next }
  /^<end of output>$/ { inside = 0; next }
  inside { out[n++] = $0; next }
  /^Test (Failed|Timeout)|^Test .*(Exception|Not Run)|^Other$/ {
    printf "\n==== %s (%s), the last %d lines of its output:\n", name, $0, (n < keep ? n : keep)
    for (i = (n > keep ? n - keep : 0); i < n; ++i) print out[i]
  }
' "$log"
