#!/usr/bin/env bash
# The checks only a GPU can run, for a GPU machine that has the CUDA toolkit,
# its driver and PyTorch but none of gpudiag's Debian packages and no network.
#
#   scripts/gpu-check.sh pack [DIR]   here, after scripts/build.sh: writes
#       DIR/gpu-check.tar.xz (DIR defaults to .gpu, which git ignores): the
#       build's GPU tests, samples, benchmarks and tools, debug information
#       stripped from the large ones, and the shared libraries they need that
#       are neither the C/C++ runtime nor CUDA's.
#   scripts/gpu-check.sh run [DIR] [STEP...]   there, from a copy of the same
#       tree: unpacks the bundle into build/ and runs the steps (all, in the
#       order below, when none is named), each for at most STEP_S seconds
#       (default 240), until BUDGET_S seconds (default 540) have gone. Each
#       step's output and gtest XML go to DIR/results, with machine.txt (the
#       GPU, PyTorch, libraries not found) and summary.txt (each step's exit
#       status and time). When $OUT is set, few files come back from it, so
#       it gets summary.txt, machine.txt, logs.tar.xz (renewed after every
#       step, so a run cut short keeps what it did) and the recorded traces
#       as traces.tar.xz, split into parts of 15 MiB.
#       RECORD_TORCH=off skips the PyTorch runs of the record step, and
#       RECORD_KINETO=off only their torch.profiler runs.
#
# The binaries keep the absolute paths of the tree that built them (test data,
# the injection library, child programs), so `run` links that path to this
# tree when they differ. CUDA's libraries come from the machine: the
# toolkit's cudart, cuBLAS and CUPTI, and PyTorch's cuDNN.
set -uo pipefail
cd "$(dirname "$0")/.."

# Steps, most wanted first: name, then the command (run from the tree's
# root, build/ unpacked).
steps=(
  doctor "build/cli/gpudiag doctor"
  gpu_programs "build/tests/gpu_programs/gpu_programs_test"
  cupti "build/tests/record/record_cupti_test --gtest_filter=CuptiEndToEnd.*:InjectionLoad.*"
  gdrt_cuda "build/tests/runtime/gdrt_test --gtest_filter=*Cuda*:*cuda*:Device.*:DeviceSelection.*:Errors.*"
  healthy_unet "build/tests/report/report_output_test --gtest_filter=Cli.TheHealthyUNet*"
  device_bench "build/bench/devices/device_step --steps 5"
  doctor_tests "build/tests/doctor/doctor_cli_test"
  train_unet "build/samples/train_unet/train_unet --epochs 2 --train 64 --val 32 --size 32 --checkpoint ''"
  samples "build/tests/samples/samples_test --gtest_filter=*SampleRun*_cuda_*:*SampleRun*_torch_*"
  record "record_traces"
  trace_bench "build/bench/trace/trace_bench gpu 3"
)

# Files under build/ the steps run or load; folders take every executable and
# shared library directly in them.
bundle_paths=(
  cli/gpudiag record/cupti record
  tests/gpu_programs tests/record/record_cupti_test tests/record/cuda_trace_program
  tests/record/dlopen_injection tests/record/nvtx_program
  tests/runtime/gdrt_test tests/samples/samples_test tests/report/report_output_test
  tests/doctor/doctor_cli_test samples/train_unet/train_unet bench/devices/device_step bench/trace/trace_bench
  share/gpudiag/python/sitecustomize.py share/gpudiag/python/gpudiag_torch_history.py
)

# Libraries the machine has in newer versions, or CUDA's own: never bundled.
system_library='^(linux-vdso|ld-linux|libc|libm|libutil|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libz|liblzma|libbz2|libzstd|libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libcupti|libnvrtc|libnvJitLink)\.so'

die() { echo "gpu-check: $*" >&2; exit 2; }

pack() {
  local dir=${1:-.gpu} build=${BUILD_DIR:-build}
  [ -x "$build/cli/gpudiag" ] || die "no $build/cli/gpudiag: run scripts/build.sh first"
  [ -x "$build/tests/gpu_programs/gpu_programs_test" ] ||
    die "no GPU tests in $build: the CUDA toolkit was not found when it was configured"
  local stage
  stage=$(mktemp -d) || die "no temporary folder"
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/build" "$stage/lib"
  local files=() path file
  for path in "${bundle_paths[@]}"; do
    if [ -d "$build/$path" ]; then
      for file in "$build/$path"/*; do
        [ -f "$file" ] && { [ -x "$file" ] || [[ $file == *.so* ]]; } && files+=("${file#"$build"/}")
      done
    elif [ -e "$build/$path" ]; then
      files+=("$path")
    else
      echo "gpu-check: $build/$path was not built; its step will fail there" >&2
    fi
  done
  for file in "$build"/samples/*/buggy_cuda "$build"/samples/*/fixed_cuda; do
    [ -x "$file" ] && files+=("${file#"$build"/}")
  done
  for file in "${files[@]}"; do
    mkdir -p "$stage/build/$(dirname "$file")"
    if [ -L "$build/$file" ]; then
      cp -P "$build/$file" "$stage/build/$file"
    elif [ "$(stat -c %s "$build/$file")" -gt 2000000 ]; then
      # Symbols stay, so stacks still name functions; file and line go.
      objcopy --strip-debug "$build/$file" "$stage/build/$file" || die "cannot strip $file"
    else
      cp -p "$build/$file" "$stage/build/$file"
    fi
  done
  # Every library a bundled file needs, found here, that the machine will not
  # provide (ldd lists what they need in turn too).
  local lib name
  while read -r name lib; do
    [[ $name =~ $system_library ]] && continue
    [[ $(realpath "$lib") == "$(realpath "$build")"/* ]] && continue  # bundled in build/
    [ -e "$stage/lib/$name" ] && continue
    cp -L "$lib" "$stage/lib/$name" || die "cannot copy $lib"
  done < <(for file in "${files[@]}"; do ldd "$build/$file" 2>/dev/null; done |
           awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
  for lib in "$stage"/lib/*; do
    [ "$(stat -c %s "$lib")" -gt 2000000 ] && strip --strip-unneeded "$lib"
  done
  realpath . > "$stage/source_dir"
  mkdir -p "$dir" || die "cannot create $dir"
  tar -C "$stage" -cf - build lib source_dir | xz -T0 -6 > "$dir/gpu-check.tar.xz" || die "cannot write the bundle"
  echo "gpu-check: $dir/gpu-check.tar.xz, $(du -m "$dir/gpu-check.tar.xz" | cut -f1) MiB:" \
       "${#files[@]} files and $(ls "$stage/lib" | wc -l) libraries"
}

# The shared/data/gpu traces again, from this machine's GPU, into $out/traces.
# Each is compressed and reported as soon as it is written, so a step cut
# short by its time cap leaves what it had done.
record_traces() {
  local traces=$out/traces name
  mkdir -p "$traces"
  finish() {  # a run that wrote no trace said why in its .txt
    [ -f "$1" ] || return 0
    gzip -9 "$1" && build/cli/gpudiag report --fail-on none "$1.gz" > "$1.report.txt" 2>&1
  }
  for program in build/tests/gpu_programs/gpu_program_*; do
    name=${program##*/gpu_program_}
    build/cli/gpudiag trace -o "$traces/cuda-$name.gdtrace" -- "$program" > "$traces/cuda-$name.txt" 2>&1
    echo "cuda-$name: exit $?"
    finish "$traces/cuda-$name.gdtrace"
  done
  # gdrt's UNet trainer on its cuda device, as the healthy_unet step traces it.
  name=gdrt-train_unet
  build/cli/gpudiag trace -o "$traces/$name.gdtrace" -- build/samples/train_unet/train_unet --epochs 1 \
    --train 64 --val 16 --size 32 --checkpoint '' > "$traces/$name.txt" 2>&1
  echo "$name: exit $?"
  finish "$traces/$name.gdtrace"
  # The PyTorch runs as shared/data/gpu/README.md describes them: the whole
  # run under gpudiag, then five steps under torch.profiler, untraced.
  local mistake step=bench/trace/torch_unet_step.py
  [ "${RECORD_TORCH:-on}" = off ] && return 0
  for mistake in none sync_in_loop pageable_async; do
    name=torch-unet-${mistake/none/healthy}
    build/cli/gpudiag trace --stacks off -o "$traces/$name.gdtrace" -- \
      python3 "$step" --mistake "$mistake" --warmup 0 --steps 20 --out "$traces/$name.json" > "$traces/$name.txt" 2>&1
    echo "$name: exit $?"
    finish "$traces/$name.gdtrace"
    [ "${RECORD_KINETO:-on}" = off ] && continue
    python3 "$step" --mistake "$mistake" --warmup 0 --steps 5 --kineto "$traces/$name.kineto.json" \
      --out "$traces/$name.kineto-steps.json" > "$traces/$name.kineto.txt" 2>&1
    echo "$name (torch.profiler): exit $?"
    finish "$traces/$name.kineto.json"
  done
}

# Where a library is, on this machine: the first folder under the roots that has it.
library_folder() {
  local name=$1 found
  shift
  found=$(find "$@" -name "$name" 2>/dev/null | head -n 1)
  [ -n "$found" ] && dirname "$found"
}

run() {
  local dir=${1:-.gpu}
  shift || true
  [ -f "$dir/gpu-check.tar.xz" ] || die "no $dir/gpu-check.tar.xz: run 'scripts/gpu-check.sh pack' where it was built"
  out=$(realpath -m "$dir/results")
  rm -rf "$out" && mkdir -p "$out" || die "cannot create $out"
  local root
  root=$(realpath .)
  tar -C "$dir" -xJf "$dir/gpu-check.tar.xz" || die "cannot unpack the bundle"
  rm -rf build && mv "$dir/build" build || die "cannot move the build into place"
  local source_dir
  source_dir=$(cat "$dir/source_dir")
  if [ "$source_dir" != "$root" ]; then
    if [ -e "$source_dir" ] && [ "$(realpath "$source_dir")" != "$root" ]; then
      die "$source_dir, where the binaries look for their tree, is another folder here"
    fi
    mkdir -p "$(dirname "$source_dir")" && ln -sfn "$root" "$source_dir" || die "cannot link $source_dir to $root"
  fi
  # Bundled libraries the machine lacks; its own are newer.
  mkdir -p "$dir/lib-used"
  local lib known
  known=$({ command -v ldconfig >/dev/null && ldconfig -p; } || /sbin/ldconfig -p 2>/dev/null)
  for lib in "$dir"/lib/*; do
    grep -q "^[[:space:]]*${lib##*/} " <<< "$known" || ln -sfn "$(realpath "$lib")" "$dir/lib-used/${lib##*/}"
  done
  # PyTorch's wheels bring CUDA's libraries under site-packages/nvidia.
  local cuda=${CUDA_HOME:-/usr/local/cuda} wheels cupti cudnn
  wheels=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
  cupti=$(library_folder 'libcupti.so.1[0-9]*' "$cuda/" ${wheels:+"$wheels"})
  cudnn=$(library_folder 'libcudnn.so.9*' "$cuda/" ${wheels:+"$wheels"})
  local path folder
  path=$(realpath "$dir/lib-used")
  for folder in "$cuda/lib64" "$cuda/lib" "$cupti" "$cudnn"; do
    [ -d "$folder" ] && [[ ":$path:" != *":$(realpath "$folder"):"* ]] && path+=":$(realpath "$folder")"
  done
  export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export GPUDIAG_CUPTI_LIBRARY=$root/build/record/cupti/libgpudiag_cupti.so out
  export -f record_traces
  export RECORD_KINETO RECORD_TORCH
  {
    echo "tree $root (binaries built in $source_dir); python3 is $(command -v python3)"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1
    for file in $(find build -type f \( -perm -u+x -o -name '*.so*' \)); do
      ldd "$file" 2>/dev/null | grep 'not found' | sed "s|^|$file: |"
    done
  } > "$out/machine.txt"
  cat "$out/machine.txt"
  local budget=${BUDGET_S:-540} step_cap=${STEP_S:-240} start=$SECONDS wanted=("$@") i name command status began
  : > "$out/summary.txt"
  for ((i = 0; i < ${#steps[@]}; i += 2)); do
    name=${steps[i]} command=${steps[i + 1]}
    if [ ${#wanted[@]} -gt 0 ] && [[ " ${wanted[*]} " != *" $name "* ]]; then continue; fi
    local left=$((budget - (SECONDS - start)))
    [ "$left" -gt "$step_cap" ] && left=$step_cap
    if [ "$left" -le 10 ]; then
      echo "$name: not run, the budget of ${budget} s is spent" | tee -a "$out/summary.txt"
      continue
    fi
    began=$SECONDS
    if [[ $command == build/* ]] && [[ $command == *_test* ]]; then
      command+=" --gtest_output=xml:$out/$name.xml"
    fi
    timeout --kill-after=5 "$left" bash -c "$command" > "$out/$name.log" 2>&1
    status=$?
    echo "$name: exit $status in $((SECONDS - began)) s" | tee -a "$out/summary.txt"
    tail -n 3 "$out/$name.log" | sed 's/^/    /'
    send_back logs
  done
  send_back traces
}

# What $OUT can take back: a few files of at most 16 MiB each.
send_back() {
  [ -n "${OUT:-}" ] || return 0
  cp "$out/summary.txt" "$out/machine.txt" "$OUT/"
  if [ "$1" = logs ]; then
    tar -C "$out" --exclude=./traces -cJf "$OUT/logs.tar.xz" . || echo "gpu-check: cannot pack the logs" >&2
  elif [ -d "$out/traces" ]; then
    tar -C "$out" -cf - traces | xz -T0 -6 | split -b 15M -d - "$OUT/traces.tar.xz.part" ||
      echo "gpu-check: cannot pack the traces" >&2
  fi
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) die "usage: scripts/gpu-check.sh pack [DIR] | run [DIR] [STEP...]" ;;
esac
