#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.0f;
}

void freed_on_every_path(int n, bool skip) {
  float* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));
  if (skip) {
    CHECK(cudaFree(scratch));
    return;
  }
  fill<<<1, 256>>>(scratch, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFree(scratch));
}

// Tricky negatives: ownership handed to the caller or to a struct; the error
// path of the allocation itself; exit() on failure.
float* make_buffer(int n) {
  float* buffer = nullptr;
  if (cudaMalloc(&buffer, n * sizeof(float)) != cudaSuccess) return nullptr;
  return buffer;
}

struct Workspace {
  float* data = nullptr;
};

void attach(Workspace& ws, int n) {
  float* data = nullptr;
  CHECK(cudaMalloc(&data, n * sizeof(float)));
  ws.data = data;
}

cudaError_t status_return(int n) {
  float* scratch = nullptr;
  cudaError_t err = cudaMalloc(&scratch, n * sizeof(float));
  if (err != cudaSuccess) return err;
  fill<<<1, 256>>>(scratch, n);
  err = cudaGetLastError();
  cudaError_t freed = cudaFree(scratch);
  return err != cudaSuccess ? err : freed;
}
