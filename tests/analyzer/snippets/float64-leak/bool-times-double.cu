// A comparison's bool multiplied by a double constant promotes to double, and
// so does the whole expression: a device lambda or an `auto` function whose
// return type is deduced from it returns double because of that leak, not
// because it computes in double on purpose.
#include <cuda_runtime.h>

template <typename Op>
__global__ void apply(float* x, int n, Op op) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = op(x[i]);
}

__device__ auto nudge_zero(float v) { return v + (v == 0.0f) * 1e-20; }  // CHECK: GD002

__global__ void safe_inverse(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f / (x[i] + (x[i] == 0.0f) * 1e-20);  // CHECK: GD002
}

cudaError_t nudge_zeros(float* x, int n) {
  auto nonzero = [] __device__(float v) { return v + (v == 0.0f) * 1e-20; };  // CHECK: GD002
  apply<<<(n + 255) / 256, 256>>>(x, n, nonzero);
  return cudaGetLastError();
}

// Declared double on purpose: computes in double, as written.
__device__ double widen(float v) { return v + (v == 0.0f) * 1e-20; }
