// A pointer into pageable memory is pageable memory: the batch of a dataset
// held in a std::vector, named by a pointer before the copy.
#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void upload_batch(const std::vector<float>& images, float* device, int batch, int n, cudaStream_t stream) {
  const float* first = images.data() + static_cast<size_t>(batch) * n;
  CHECK(cudaMemcpyAsync(device, first, n * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
}

void upload_local(float* device, int n, cudaStream_t stream) {
  std::vector<float> staging(2 * n);
  float* half = staging.data();
  half = half + n;
  CHECK(cudaMemcpyAsync(device, half, n * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
}

void upload_pinned(float* device, int n, cudaStream_t stream) {
  float* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, 2 * n * sizeof(float)));
  const float* second = pinned + n;
  CHECK(cudaMemcpyAsync(device, second, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(pinned));
}
