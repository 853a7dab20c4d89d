// What the programs of tests/gpu_programs share: CHECK, which ends a program
// on an unexpected CUDA error with its summary line's prefix (the program
// defines kProgram), the fill kernel several of them start from, and
// spin_read, a kernel that holds the GPU for a measured time.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                      \
  do {                                                                                                   \
    if (const cudaError_t e_ = (call); e_ != cudaSuccess) {                                              \
      std::printf("%s: %s failed: %d \"%s\"\n", kProgram, #call, static_cast<int>(e_), cudaGetErrorString(e_)); \
      std::exit(2);                                                                                      \
    }                                                                                                    \
  } while (0)

__global__ void fill(float* x, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Each thread waits spin_ns of wall time, then copies its element of src.
__global__ void spin_read(const float* src, float* out, int n, long long spin_ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < static_cast<unsigned long long>(spin_ns)) __nanosleep(1000);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = src[i];
}
