// A main that frees every device buffer but one: the one it forgets is
// still held when the program ends, which is a leak (Compute Sanitizer's
// --leak-check reports it), even though main's exit releases it. Releasing
// everything at once with cudaDeviceReset, or handing the buffer to an
// owner, is fine.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

#define CHECK_CUDA(call) do { if ((call) != cudaSuccess) exit(1); } while (0)

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 1;
  }
  int n = atoi(argv[1]);
  float *a, *b, *c;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, n * sizeof(float)));  // CHECK: GD007
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  return 0;
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
