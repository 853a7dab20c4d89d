// The fixed twin of parameters-bug.cu: pinned staging buffers, or a
// synchronous copy where no overlap was meant.
#include <cuda_runtime.h>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void upload_weights(float* device, const std::vector<float>& weights, cudaStream_t stream) {
  float* staging = nullptr;
  CHECK(cudaMallocHost(&staging, weights.size() * sizeof(float)));
  std::memcpy(staging, weights.data(), weights.size() * sizeof(float));
  CHECK(cudaMemcpyAsync(device, staging, weights.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(staging));
}

void upload_prompt(char* device, const std::string& prompt) {
  CHECK(cudaMemcpy(device, prompt.data(), prompt.size(), cudaMemcpyHostToDevice));
}

void download_stats(const float* device, std::array<float, 8>& stats) {
  CHECK(cudaMemcpy(stats.data(), device, sizeof(stats), cudaMemcpyDeviceToHost));
}

void upload_raw(float* device, const float* host, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
}
