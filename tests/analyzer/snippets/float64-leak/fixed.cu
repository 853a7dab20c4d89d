#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>

// Tricky negatives: exp/sqrt on float resolve to the float overloads; a
// constant folded at compile time; printf promotes by language rule; a
// kernel that computes in double on purpose.
__global__ void softplus(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float scale = 1.0 / 255.0;
  if (i < n) x[i] = scale * logf(1.0f + exp(x[i])) + sqrt(x[i]);
  if (i == 0) printf("%f\n", x[0]);
}

__global__ void daxpy(double a, const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + 1.0;
}

__global__ void half_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float half = 0.5;
  if (i < n) x[i] *= half;
}
