// What the programs of tests/gpu_programs share: CHECK, which ends a program
// on an unexpected CUDA error with its summary line's prefix (the program
// defines kProgram), and the fill kernel several of them start from.
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
