// Buggy twin of lambda-in-passed-helper.cu: the helper whose generic lambda
// launches is called directly, and its caller checks nothing; a second
// helper's caller checks right after the call, and is fine.
#include <cuda_runtime.h>
#include <cstdlib>
#include <type_traits>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

template <int Block>
__global__ void halve(float* x, int n) {
  int i = blockIdx.x * Block + threadIdx.x;
  if (i < n) x[i] *= 0.5f;
}

template <typename Launch>
void by_block(Launch&& launch, int block) {
  if (block == 128) launch(std::integral_constant<int, 128>{});
  else launch(std::integral_constant<int, 256>{});
}

void halve_unchecked(float* x, int n, int block) {
  auto launch = [&](auto b) {
    halve<b.value><<<(n + b.value - 1) / b.value, b.value>>>(x, n);  // CHECK: GD006
  };
  by_block(launch, block);
}

void halve_checked_by_caller(float* x, int n, int block) {
  auto launch = [&](auto b) {
    halve<b.value><<<(n + b.value - 1) / b.value, b.value>>>(x, n);
  };
  by_block(launch, block);
}

void step_unchecked(float* x, int n) { halve_unchecked(x, n, 256); }

void step_checked(float* x, int n) {
  halve_checked_by_caller(x, n, 128);
  CHECK(cudaGetLastError());
}
