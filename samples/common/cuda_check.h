// CUDA_CHECK(call), the CUDA samples' check of a runtime call: on failure it
// prints where and CUDA's message, and exits 1, as most hand-written training
// code does (cuda-samples' checkCudaErrors, llm.c's cudaCheck).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                                    \
  do {                                                                                      \
    const cudaError_t status_ = (call);                                                     \
    if (status_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
