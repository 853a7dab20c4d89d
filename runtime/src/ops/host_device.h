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

namespace gdrt::scalar {

// A product rounded on its own before anything adds to it. The cpu build
// never fuses a*b + c (GCC keeps -ffp-contract off under -std=c++20); nvcc
// does by default, so a formula writes mul_rn(a, b) + c where the product
// feeds a sum, and both devices round it alike.
GDRT_HOST_DEVICE inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GDRT_HOST_DEVICE inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace gdrt::scalar
