// Arrays of buffers, one allocation per element: each element is its own
// allocation; the array itself is host memory holding pointers.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void touch(char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1;
}

void per_stream_buffers(int n) {
  const int streams = 4;
  char* device[streams];
  char* pinned[streams];
  for (int i = 0; i < streams; ++i) {
    CHECK(cudaMalloc(&device[i], n));
    CHECK(cudaMallocHost(&pinned[i], n));
    CHECK(cudaMemset(device[i], 0, n));
  }
  for (int i = 0; i < streams; ++i) {
    touch<<<1, 256>>>(device[i], n);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < streams; ++i) {
    CHECK(cudaFree(device[i]));
    CHECK(cudaFreeHost(pinned[i]));
  }
}
