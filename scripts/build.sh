#!/usr/bin/env bash
# Configures and builds gpudiag into build/ (BUILD_DIR overrides), warnings as
# errors. Arguments go to the configure step; BUILD_TARGETS (space-separated)
# builds only those targets instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUDIAG_WERROR=ON "$@"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
