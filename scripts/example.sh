#!/usr/bin/env bash
# Installs the dependencies, builds, and runs gpudiag on the bundled examples:
# the GPU stack check, gpulint over samples/, a traced UNet training run with
# its report (terminal summary and HTML memory timeline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build=$(realpath "${BUILD_DIR:-build}")
out="$build/example"
mkdir -p "$out"

echo "== gpudiag doctor: is the GPU stack usable?"
"$build/tracer/cli/gpudiag" doctor || true   # exit 1: no usable GPU, expected on CPU-only machines

echo
echo "== gpulint samples/: what the sources get wrong before they run"
if [ -x "$build/analyzer/gpulint" ]; then
  "$build/analyzer/gpulint" samples/ || true  # exit 1: findings, which is the point of the example
  "$build/analyzer/gpulint" --format=sarif -o "$out/samples.sarif" samples/ || true
  echo "SARIF for code scanning: $out/samples.sarif"
else
  echo "gpulint was not built (no clang/LLVM 19)"
fi

echo
echo "== gpudiag trace: a UNet trains on synthetic shapes on emu (an emulated GPU) under the tracer"
"$build/tracer/cli/gpudiag" trace -o "$out/train_unet.gdtrace" -- \
  "$build/samples/train_unet/train_unet" --device emu --epochs 2 --checkpoint "$out/train_unet.safetensors"

echo
echo "== gpudiag explain GD004"
# sed reads to the end: head would close the pipe early, and pipefail would
# turn explain's SIGPIPE into the script's exit status 141.
"$build/tracer/cli/gpudiag" explain GD004 | sed -n '1,40p'
echo "Open $out/train_unet.gdtrace.html in a browser for the memory timeline."
