#!/usr/bin/env bash
# Installs every Debian 12 package gpudiag needs to build, test and run.
# The CUDA 13 toolkit (cuDNN 9, CUPTI) is expected at /usr/local/cuda; without
# it the CUDA parts are skipped.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build pkg-config git ccache xz-utils
  clang-19 libclang-19-dev llvm-19-dev clang-tidy-19 libclang-rt-19-dev libomp-19-dev
  libfmt-dev libcli11-dev libsimdjson-dev nlohmann-json3-dev
  libsqlite3-dev zlib1g-dev libunwind-dev libdw-dev libdeflate-dev
  libopenblas-dev libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-torch python3-jsonschema python3-pip python3-distributed
  chromium
)
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${packages[@]}"
