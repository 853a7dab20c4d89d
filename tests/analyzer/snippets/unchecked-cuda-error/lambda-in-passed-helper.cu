// Correct: the launch sits in a generic lambda inside a launch helper
// that is handed to a caller as a callable; the caller checks
// cudaGetLastError() right after invoking it. A plain helper passed the same
// way is not judged (its callers cannot be seen); neither is the lambda's launch.
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

void halve_helper(float* x, int n, int block) {
  auto launch = [&](auto b) {
    halve<b.value><<<(n + b.value - 1) / b.value, b.value>>>(x, n);
  };
  by_block(launch, block);
}

template <typename Helper>
void run_step(float* x, int n, int block, Helper helper) {
  helper(x, n, block);
  CHECK(cudaGetLastError());
}

void step(float* x, int n) { run_step(x, n, 256, halve_helper); }
