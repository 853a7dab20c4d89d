#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float sum_one_by_one(const float* device, int n) {
  float total = 0.0f;
  for (int i = 0; i < n; ++i) {
    float value = 0.0f;
    CHECK(cudaMemcpy(&value, device + i, sizeof(float), cudaMemcpyDeviceToHost));  // CHECK: GD005
    total += value;
  }
  return total;
}

void upload_one_by_one(float* device, const float* host, int n) {
  int i = 0;
  while (i < n) {
    CHECK(cudaMemcpy(&device[i], &host[i], sizeof(float), cudaMemcpyHostToDevice));  // CHECK: GD005
    ++i;
  }
}
