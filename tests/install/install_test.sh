#!/usr/bin/env bash
# Installs the build into a fresh prefix, then configures, builds and runs a
# project that finds it with find_package(gpudiag).
set -euo pipefail
build_dir=$1 source_dir=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/gpudiag"
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
output=$(LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/consumer")
echo "$output"
[ "$output" = "sum=12 tracing=0" ]
