// Leaks on error paths: a later step fails and the function returns (or
// breaks out of its work) before the frees at the bottom. The failure branch
// of an allocation's own status test holds nothing.
#include <cuda_runtime.h>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

__global__ void scale(float* x, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= k;
}

cudaError_t second_allocation_fails(int n) {
  float* a = nullptr;
  float* b = nullptr;
  cudaError_t err = cudaMalloc(&a, n * sizeof(float));  // CHECK: GD007
  if (err != cudaSuccess) return err;
  if (cudaMalloc(&b, n * sizeof(float)) != cudaSuccess) return cudaErrorMemoryAllocation;
  scale<<<1, 256>>>(a, 2.0f, n);
  scale<<<1, 256>>>(b, 2.0f, n);
  cudaFree(a);
  cudaFree(b);
  return cudaGetLastError();
}

bool copy_fails(const float* host, int n) {
  float* device = nullptr;
  if (cudaMalloc(&device, n * sizeof(float)) != cudaSuccess) return false;  // CHECK: GD007
  if (cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return false;
  scale<<<1, 256>>>(device, 0.5f, n);
  cudaFree(device);
  return true;
}

int launch_fails(int n) {
  float* work = nullptr;
  cudaMalloc(&work, n * sizeof(float));  // CHECK: GD007
  scale<<<1, 256>>>(work, 3.0f, n);
  cudaError_t status = cudaGetLastError();
  if (status) return -1;
  cudaFree(work);
  return 0;
}

void break_out_of_batches(int batches, int n) {
  for (int i = 0; i < batches; ++i) {
    float* chunk = nullptr;
    if (cudaMalloc(&chunk, n * sizeof(float)) != cudaSuccess) break;  // CHECK: GD007
    scale<<<1, 256>>>(chunk, 1.0f, n);
    if (cudaDeviceSynchronize() != cudaSuccess) break;
    cudaFree(chunk);
  }
}

// Correct twins.
cudaError_t second_allocation_fails_frees(int n) {
  float* a = nullptr;
  float* b = nullptr;
  cudaError_t err = cudaMalloc(&a, n * sizeof(float));
  if (err != cudaSuccess) return err;
  if (cudaMalloc(&b, n * sizeof(float)) != cudaSuccess) {
    cudaFree(a);
    return cudaErrorMemoryAllocation;
  }
  scale<<<1, 256>>>(a, 2.0f, n);
  scale<<<1, 256>>>(b, 2.0f, n);
  cudaFree(a);
  cudaFree(b);
  return cudaGetLastError();
}

bool copy_fails_frees(const float* host, int n) {
  float* device = nullptr;
  if (cudaMalloc(&device, n * sizeof(float)) != cudaSuccess) return false;
  if (cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(device);
    return false;
  }
  scale<<<1, 256>>>(device, 0.5f, n);
  cudaFree(device);
  return true;
}

bool null_test_of_the_pointer(int n) {
  float* device = nullptr;
  cudaMalloc(&device, n * sizeof(float));
  if (!device) return false;
  scale<<<1, 256>>>(device, 0.5f, n);
  cudaFree(device);
  return true;
}

// Correlated conditions: the allocation and the free share a condition the
// analysis cannot relate; nothing is claimed.
void correlated(bool use_scratch, int n) {
  float* scratch = nullptr;
  if (use_scratch) cudaMalloc(&scratch, n * sizeof(float));
  scale<<<1, 256>>>(scratch, 1.0f, n);
  if (use_scratch) cudaFree(scratch);
}

void owned_flag(int n) {
  float* scratch = nullptr;
  bool owns = false;
  if (n > 1024) {
    cudaMalloc(&scratch, n * sizeof(float));
    owns = true;
  }
  scale<<<1, 256>>>(scratch, 1.0f, n);
  if (owns) cudaFree(scratch);
}

void switch_correlated(int mode, int n) {
  float* scratch = nullptr;
  switch (mode) {
    case 1: cudaMalloc(&scratch, n * sizeof(float)); break;
    default: break;
  }
  scale<<<1, 256>>>(scratch, 1.0f, n);
  switch (mode) {
    case 1: cudaFree(scratch); break;
    default: break;
  }
}

void break_out_of_batches_frees(int batches, int n) {
  for (int i = 0; i < batches; ++i) {
    float* chunk = nullptr;
    if (cudaMalloc(&chunk, n * sizeof(float)) != cudaSuccess) break;
    scale<<<1, 256>>>(chunk, 1.0f, n);
    cudaError_t status = cudaDeviceSynchronize();
    cudaFree(chunk);
    if (status != cudaSuccess) break;
  }
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
