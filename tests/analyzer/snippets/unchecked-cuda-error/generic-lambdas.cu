#include <cuda_runtime.h>
#include <cstdlib>
#include <type_traits>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

template <int BlockSize>
__global__ void scale(float* data, int n) {
  const int i = blockIdx.x * BlockSize + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}

template <typename Launch>
void dispatch(Launch&& launch, int block_size) {
  if (block_size == 128) launch(std::integral_constant<int, 128>{});
  else launch(std::integral_constant<int, 256>{});
}

// A launch in a generic lambda (llm.c's dispatch pattern) is reported once,
// under the kernel's name, not again for the uninstantiated pattern.
void scale_unchecked(float* data, int n, int block_size) {
  auto launch = [&](auto block) {
    scale<block.value><<<(n + block.value - 1) / block.value, block.value>>>(data, n);  // CHECK: GD006
  };
  dispatch(launch, block_size);
}

// Fixed: the launch is checked right after.
void scale_checked(float* data, int n, int block_size) {
  auto launch = [&](auto block) {
    scale<block.value><<<(n + block.value - 1) / block.value, block.value>>>(data, n);
    CHECK(cudaGetLastError());
  };
  dispatch(launch, block_size);
}
