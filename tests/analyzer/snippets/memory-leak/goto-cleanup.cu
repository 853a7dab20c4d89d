// `goto` cleanup blocks: every failure jumps to one label that frees what
// was allocated. The buggy versions forget a buffer there.
#include <cuda_runtime.h>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int cleanup_forgets_one(int n) {
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  int rc = -1;
  if (cudaMalloc(&a, n * sizeof(float)) != cudaSuccess) goto fail;
  if (cudaMalloc(&b, n * sizeof(float)) != cudaSuccess) goto fail;
  if (cudaMalloc(&c, n * sizeof(float)) != cudaSuccess) goto fail;  // CHECK: GD007
  add<<<1, 256>>>(a, b, c, n);
  if (cudaDeviceSynchronize() != cudaSuccess) goto fail;
  rc = 0;
fail:
  cudaFree(a);
  cudaFree(b);
  return rc;
}

cudaError_t jump_past_the_frees(int n) {
  float* a = nullptr;
  float* b = nullptr;
  cudaError_t err = cudaMalloc(&a, n * sizeof(float));  // CHECK: GD007
  if (err != cudaSuccess) goto done;
  err = cudaMalloc(&b, n * sizeof(float));
  if (err != cudaSuccess) goto done;
  add<<<1, 256>>>(a, a, b, n);
  err = cudaGetLastError();
  cudaFree(b);
  cudaFree(a);
done:
  return err;
}

// Correct twins.
int cleanup_frees_all(int n) {
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  int rc = -1;
  if (cudaMalloc(&a, n * sizeof(float)) != cudaSuccess) goto fail;
  if (cudaMalloc(&b, n * sizeof(float)) != cudaSuccess) goto fail;
  if (cudaMalloc(&c, n * sizeof(float)) != cudaSuccess) goto fail;
  add<<<1, 256>>>(a, b, c, n);
  if (cudaDeviceSynchronize() != cudaSuccess) goto fail;
  rc = 0;
fail:
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return rc;
}

cudaError_t cleanup_tests_each(int n) {
  float* a = nullptr;
  float* b = nullptr;
  cudaError_t err = cudaMalloc(&a, n * sizeof(float));
  if (err != cudaSuccess) goto done;
  err = cudaMalloc(&b, n * sizeof(float));
  if (err != cudaSuccess) goto free_a;
  add<<<1, 256>>>(a, a, b, n);
  err = cudaGetLastError();
  cudaFree(b);
free_a:
  cudaFree(a);
done:
  return err;
}

int cleanup_checks_null(int n) {
  float* a = nullptr;
  float* b = nullptr;
  int rc = -1;
  if (cudaMalloc(&a, n * sizeof(float)) != cudaSuccess) goto fail;
  if (cudaMalloc(&b, n * sizeof(float)) != cudaSuccess) goto fail;
  add<<<1, 256>>>(a, a, b, n);
  rc = 0;
fail:
  if (b) cudaFree(b);
  if (a) cudaFree(a);
  return rc;
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
