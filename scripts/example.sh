#!/usr/bin/env bash
# The main job on the bundled samples: installs the dependencies, builds the
# tools and samples, then shows both halves of gpudiag catching real bugs:
# gpulint over samples/ (what the sources get wrong before they run), and a
# buggy sample UNet traced on emu, an emulated GPU on which its bug really
# happens, with its report and HTML memory timeline. Then the healthy
# trainer, traced, for comparison. Exits 0 when all of that ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_TARGETS=example bash scripts/build.sh
build=$(realpath "${BUILD_DIR:-build}")
gpudiag="$build/cli/gpudiag"
out="$build/example"
mkdir -p "$out"

echo
echo "== gpulint -p $build samples/: what the sources get wrong before they run"
if [ -x "$build/analyzer/gpulint" ]; then
  # Exit 1 means findings: the buggy samples are there to have them.
  "$build/analyzer/gpulint" -p "$build" samples/ || [ $? -eq 1 ]
  "$build/analyzer/gpulint" -p "$build" --format=sarif -o "$out/samples.sarif" samples/ || [ $? -eq 1 ]
  echo "SARIF for code scanning: $out/samples.sarif"
else
  echo "gpulint was not built (no clang/LLVM 19)"
fi

echo
echo "== samples/unsynced-transfer/buggy on emu: validation predictions come back with a"
echo "   non-blocking copy and are read before it lands"
GDRT_DEVICE=emu "$gpudiag" trace -o "$out/unsynced-transfer.gdtrace" -- "$build/samples/unsynced-transfer/buggy"

echo
echo "== gpudiag explain GD003"
# sed reads to the end: head would close the pipe early, and pipefail would
# turn explain's SIGPIPE into the script's exit status 141.
"$gpudiag" explain GD003 | sed -n '1,30p'

echo
echo "== samples/train_unet on emu: the healthy trainer, for comparison"
GDRT_DEVICE=emu "$gpudiag" trace -o "$out/train_unet.gdtrace" -- \
  "$build/samples/train_unet/train_unet" --epochs 2 --checkpoint "$out/train_unet.safetensors"

echo
echo "Open in a browser for the memory timeline with allocation stacks:"
echo "  $out/unsynced-transfer.gdtrace.html (the bug)"
echo "  $out/train_unet.gdtrace.html (the healthy run)"
echo "Every sample, with the commands that reproduce and diagnose it: samples/README.md"
