#!/usr/bin/env bash
# Configures and builds gpudiag into build/ (BUILD_DIR overrides), warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUDIAG_WERROR=ON "$@"
cmake --build "$build_dir" -j "$(nproc)"
