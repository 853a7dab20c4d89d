// Correct twin of main-frees-others.cu: every buffer is freed, and a second
// program ends with cudaDeviceReset, which releases all of them.
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

void release(float* p) { CHECK_CUDA(cudaFree(p)); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 1;
  }
  int n = atoi(argv[1]);
  float *a, *b, *c, *d;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  release(c);
  if (n > 1024) {
    fprintf(stderr, "large run\n");
    cudaDeviceReset();
    return 0;
  }
  CHECK_CUDA(cudaFree(d));
  return 0;
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
