// Host buffers handed in as parameters whose type proves them pageable.
#include <cuda_runtime.h>
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void upload_weights(float* device, const std::vector<float>& weights, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
}

void upload_prompt(char* device, const std::string& prompt, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, prompt.data(), prompt.size(), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
}

void download_stats(const float* device, std::array<float, 8>& stats, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(stats.data(), device, sizeof(stats), cudaMemcpyDeviceToHost, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
}

// A pointer parameter of unknown origin may be pinned: nothing said.
void upload_raw(float* device, const float* host, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
}
