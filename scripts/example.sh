#!/usr/bin/env bash
# Installs the dependencies, builds, and runs gpudiag on the bundled example:
# the GPU stack check, then the explanation of a rule and of a CUDA error.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bin="${BUILD_DIR:-build}/tracer/cli/gpudiag"

echo "== gpudiag doctor"
"$bin" doctor || true   # exit 1 means no usable GPU: expected on CPU-only machines
echo
echo "== gpudiag explain GD004"
"$bin" explain GD004
echo
echo "== gpudiag explain 700"
"$bin" explain 700
