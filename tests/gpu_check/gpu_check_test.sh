#!/usr/bin/env bash
# Usage: gpu_check_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
# Checks scripts/gpu-check.sh's errors, then packs this build and checks what
# the bundle holds: the GPU checks' programs, under 64 MiB, and every library
# they load either bundled or CUDA's own (the GPU machine provides those).
set -uo pipefail
source_dir=$1 build_dir=$2 work=$3
script=$source_dir/scripts/gpu-check.sh
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$script" 2>&1); status=$?
[ "$status" = 2 ] && [[ $out == *usage* ]] || fail "no arguments: exit $status, '$out'"
out=$("$script" run "$work/none" 2>&1); status=$?
[ "$status" = 2 ] && [[ $out == *"no $work/none/gpu-check.tar.xz"* ]] || fail "run without a bundle: exit $status, '$out'"

[ -x "$build_dir/tests/gpu_programs/gpu_programs_test" ] || { echo "SKIP: this build has no CUDA test programs"; exit 77; }
BUILD_DIR=$build_dir "$script" pack "$work/bundle" || fail "pack: exit $?"
bundle=$work/bundle/gpu-check.tar.xz
size=$(stat -c %s "$bundle")
[ "$size" -lt $((64 << 20)) ] || fail "the bundle is $size bytes, over the 64 MiB a GPU machine takes"
mkdir -p "$work/unpacked" && tar -C "$work/unpacked" -xJf "$bundle" || fail "cannot unpack the bundle"
for file in build/cli/gpudiag build/record/cupti/libgpudiag_cupti.so build/tests/gpu_programs/gpu_programs_test \
            build/tests/gpu_programs/gpu_program_bad_launch build/tests/record/record_cupti_test \
            build/tests/runtime/gdrt_test build/tests/samples/samples_test build/samples/unsynced-transfer/buggy_cuda \
            source_dir; do
  [ -e "$work/unpacked/$file" ] || fail "the bundle has no $file"
done
[ "$(cat "$work/unpacked/source_dir")" = "$(realpath "$source_dir")" ] || fail "source_dir is not the tree that built it"
# Every library a bundled file loads is the bundle's (lib/, which comes
# first there too, or build/, which the binaries' run path names), or one the
# GPU machine has: the C/C++ runtime, the compression libraries, and CUDA's.
provided='^(linux-vdso|ld-linux|libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|libz|liblzma|libbz2|libzstd|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libcupti|libnvrtc|libnvJitLink)\.so'
built=$(realpath "$build_dir")
unexpected=$(cd "$work/unpacked" && find build lib -type f | while read -r file; do
  LD_LIBRARY_PATH=lib ldd "$file" 2>/dev/null | awk -v f="$file" -v provided="$provided" -v built="$built/" \
    '$2 == "=>" && $3 !~ /^lib\// && index($3, built) != 1 && $1 !~ provided {print f ": " $1 " => " $3}'
done)
[ -z "$unexpected" ] || fail "libraries neither bundled nor on a GPU machine: $unexpected"
echo "PASS: $(du -m "$bundle" | cut -f1) MiB"
