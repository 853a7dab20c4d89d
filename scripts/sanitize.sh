#!/usr/bin/env bash
# Builds libgdrt, the recorder and their tests with one sanitizer, in a
# folder of their own, and runs the runtime's tests there:
#   bash scripts/sanitize.sh address|thread|undefined
# BUILD_DIR overrides the folder (build-<sanitizer>). The CUDA parts and the
# analyzer are left out: nvcc's device code and libclang are not instrumented.
# The emu_races tests run under each: the GPU races they reproduce happen in
# the order a gate holding the stream imposes, so every access is ordered.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:-}
case "$sanitizer" in
  address | thread | undefined) ;;
  *) echo "usage: bash scripts/sanitize.sh address|thread|undefined" >&2; exit 2 ;;
esac
export BUILD_DIR=${BUILD_DIR:-build-$sanitizer}
export BUILD_TARGETS="gdrt_test gdrt_emu_semantics_test gdrt_emu_findings_test gdrt_trace_test"
# -O1 and line tables only: the sanitized build compiles in about half the
# time of -O2 with full debug information, and its reports still name lines.
flags="-O1 -g1 -DNDEBUG"
bash scripts/build.sh -DGPUDIAG_SANITIZE="$sanitizer" -DGPUDIAG_WITH_CUDA=OFF -DGPUDIAG_WITH_ANALYZER=OFF \
  -DGPUDIAG_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags"

tests=(-L runtime -E '^train_unet_learns$')  # the sample trainer is not built here
run=()
case "$sanitizer" in
  # emu's fault handler reports a host access to device memory, then passes
  # the fault on: AddressSanitizer must let it in front of its own.
  address) export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_segv_handler=1:detect_leaks=1:abort_on_error=0} ;;
  thread)
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/thread.supp}
    # Its shadow memory needs the address layout that randomisation can break
    # (kernels with 32 bits of mmap entropy); without randomisation it always fits.
    if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R); fi
    ;;
  undefined) export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} ;;
esac
status=0
"${run[@]}" ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 600 "${tests[@]}" || status=$?
if ((status != 0)); then
  bash scripts/print-failures.sh "$BUILD_DIR" 30
  # What each report was about, last, where a caller that keeps only the
  # end of this output still sees it.
  echo "the sanitizer's reports, by kind and place:"
  grep -h '^SUMMARY: ' "$BUILD_DIR/Testing/Temporary/LastTest.log" | sort | uniq -c | sort -rn | head -20 || true
fi
exit "$status"
