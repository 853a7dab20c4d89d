// A kernel handed a pointer into a std::vector through a local name gets
// pageable host memory all the same.
#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

void scale_masks(std::vector<float>& masks, int step, int n) {
  float* batch = masks.data() + static_cast<size_t>(step) * n;
  scale<<<(n + 255) / 256, 256>>>(batch, n);  // CHECK: GD001
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}
