// GDRT_HOST_DEVICE marks the scalar formulas of ops/scalar_*.h, which the
// cpu kernels (src/cpu) and the cuda kernels (src/cuda) share: each op's
// arithmetic is written once, compiled for the host by both and for the GPU
// as well when nvcc compiles it. Keep these headers C++17 (nvcc builds the
// .cu files so) and free of host-only calls.
#pragma once

#ifdef __CUDACC__
#define GDRT_HOST_DEVICE __host__ __device__
#else
#define GDRT_HOST_DEVICE
#endif
