#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void upload_from_vector(float* device, int n, cudaStream_t stream) {
  std::vector<float> batch(n);
  CHECK(cudaMemcpyAsync(device, batch.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
}

void download_to_new(const float* device, int n, cudaStream_t stream) {
  float* result = new float[n];
  CHECK(cudaMemcpyAsync(result, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
  delete[] result;
}
