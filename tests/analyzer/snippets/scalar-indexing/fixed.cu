#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float sum_in_one_copy(const float* device, int n) {
  std::vector<float> host(n);
  CHECK(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  float total = 0.0f;
  for (int i = 0; i < n; ++i) total += host[i];
  return total;
}

// Tricky negatives: a loop that copies each whole array once; a loop polling
// one flag (not indexed by the loop).
void copy_each_array_once(float** device, float** host, int arrays, int n) {
  for (int a = 0; a < arrays; ++a)
    CHECK(cudaMemcpy(device[a], host[a], n * sizeof(float), cudaMemcpyHostToDevice));
}

__global__ void work(int* flag) { *flag = 1; }

void poll_flag(int* device_flag) {
  int done = 0;
  for (int tries = 0; tries < 10 && !done; ++tries) {
    work<<<1, 1>>>(device_flag);
    CHECK(cudaGetLastError());
    if (tries > 5) CHECK(cudaMemcpy(&done, device_flag, sizeof(int), cudaMemcpyDeviceToHost));
  }
}
