#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = 1.0f;
}

// Still a bug: nothing gives 'data' a new allocation after the free.
void launch_after_free(int n) {
  float* data = nullptr;
  CHECK(cudaMalloc(&data, n * sizeof(float)));
  CHECK(cudaFree(data));
  fill<<<(n + 255) / 256, 256>>>(data, n);  // CHECK: GD004
  CHECK(cudaGetLastError());
}

// Tricky negative (seen in cuda-samples' UnifiedMemoryPerf): the pointer is
// freed, then cudaHostGetDevicePointer writes a new (mapped) address into it.
void mapped_after_free(int n, bool zero_copy) {
  float* device = nullptr;
  float* host = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaFree(device));
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  if (zero_copy) CHECK(cudaHostGetDevicePointer(&device, host, 0));
  else CHECK(cudaMalloc(&device, n * sizeof(float)));
  fill<<<(n + 255) / 256, 256>>>(device, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  if (!zero_copy) CHECK(cudaFree(device));
  CHECK(cudaFreeHost(host));
}

void build_graph(cudaGraphExec_t* exec, float** out, int n);

// Tricky negative (cuda-samples' graphMemoryNodes): a graph with a memory
// allocation node writes its address into 'data' when it is built and
// allocates it again at every launch, so a use after a later launch is fine.
void graph_allocates_again(cudaStream_t stream, int n) {
  cudaGraphExec_t exec;
  float* data = nullptr;
  build_graph(&exec, &data, n);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(data));
  CHECK(cudaGraphLaunch(exec, stream));
  fill<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFreeAsync(data, stream));
  CHECK(cudaStreamSynchronize(stream));
}
