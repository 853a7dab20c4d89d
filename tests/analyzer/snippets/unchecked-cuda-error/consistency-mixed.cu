// No habit to break: half of the file's launches read the last error right
// after them, half only after other work, which still reads it. As in a file
// that never checks its launches right away, a later read in the function
// counts.
#include <cuda_runtime.h>
#include <cstdlib>

#define CUDA_CHECK(call) do { if ((call) != cudaSuccess) std::abort(); } while (0)

__global__ void fill(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

void fill_both(float* a, float* b, int n) {
  fill<<<(n + 255) / 256, 256>>>(a, 0.0f, n);
  CUDA_CHECK(cudaGetLastError());
  fill<<<(n + 255) / 256, 256>>>(b, 1.0f, n);
  CUDA_CHECK(cudaGetLastError());
}

void fill_then_copy(float* a, float* b, int n) {
  fill<<<(n + 255) / 256, 256>>>(a, 2.0f, n);
  fill<<<(n + 255) / 256, 256>>>(b, 3.0f, n);
  CUDA_CHECK(cudaMemcpy(b, a, n * sizeof(float), cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaGetLastError());
}
