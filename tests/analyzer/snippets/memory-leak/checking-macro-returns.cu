// A checking macro that returns the failed status: each check between
// allocations is a way out on which the earlier buffers leak. Reported once
// per allocation, at the allocation. A goto error block that frees is fine.
#include <cuda_runtime.h>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

#define RETURN_IF_FAILED(call)                    \
  do {                                            \
    cudaError_t status_ = (call);                 \
    if (status_ != cudaSuccess) return status_;   \
  } while (0)

#define GOTO_IF_FAILED(call, label)               \
  do {                                            \
    status = (call);                              \
    if (status != cudaSuccess) goto label;        \
  } while (0)

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

cudaError_t vector_add(const float* ha, const float* hb, float* hc, int n) {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const size_t bytes = n * sizeof(float);
  RETURN_IF_FAILED(cudaMalloc(&a, bytes));  // CHECK: GD007
  RETURN_IF_FAILED(cudaMalloc(&b, bytes));  // CHECK: GD007
  RETURN_IF_FAILED(cudaMalloc(&c, bytes));  // CHECK: GD007
  RETURN_IF_FAILED(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice));
  RETURN_IF_FAILED(cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice));
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  RETURN_IF_FAILED(cudaMemcpy(hc, c, bytes, cudaMemcpyDeviceToHost));
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return cudaSuccess;
}

// Correct twin: every failure jumps to the block that frees what is held.
cudaError_t vector_add_cleans_up(const float* ha, const float* hb, float* hc, int n) {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const size_t bytes = n * sizeof(float);
  cudaError_t status = cudaSuccess;
  GOTO_IF_FAILED(cudaMalloc(&a, bytes), done);
  GOTO_IF_FAILED(cudaMalloc(&b, bytes), done);
  GOTO_IF_FAILED(cudaMalloc(&c, bytes), done);
  GOTO_IF_FAILED(cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice), done);
  GOTO_IF_FAILED(cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice), done);
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  GOTO_IF_FAILED(cudaMemcpy(hc, c, bytes, cudaMemcpyDeviceToHost), done);
done:
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return status;
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
