#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Tricky negatives: pinned with cudaHostAlloc, pageable registered with cudaHostRegister.
void upload_pinned(float* device, int n, cudaStream_t stream) {
  float* batch = nullptr;
  CHECK(cudaHostAlloc(&batch, n * sizeof(float), cudaHostAllocDefault));
  CHECK(cudaMemcpyAsync(device, batch, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(batch));
}

void upload_registered(float* device, int n, cudaStream_t stream) {
  float* batch = static_cast<float*>(malloc(n * sizeof(float)));
  CHECK(cudaHostRegister(batch, n * sizeof(float), cudaHostRegisterDefault));
  CHECK(cudaMemcpyAsync(device, batch, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaHostUnregister(batch));
  free(batch);
}
