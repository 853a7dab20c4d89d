#!/usr/bin/env bash
# Configures and builds gpudiag into build/ (BUILD_DIR overrides), warnings as
# errors. Arguments go to the configure step; BUILD_TARGETS (space-separated)
# builds only those targets instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null; then
  # Compiles go through ccache, so a second checkout of the same tree (the
  # fresh clone the example test builds) reuses this one's objects. Paths
  # under CCACHE_BASEDIR are hashed relative to the build folder and the
  # build folder itself is left out of the hash, so the two trees' compiles
  # look alike; the debug information of a reused object names the tree that
  # compiled it first. The cache lives in the build folder unless one is set.
  export CCACHE_DIR=${CCACHE_DIR:-$(realpath -m "$build_dir")/ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=1
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUDIAG_WERROR=ON "${launcher[@]}" "$@"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
