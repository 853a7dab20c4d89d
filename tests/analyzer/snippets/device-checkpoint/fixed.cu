#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void save_weights(int n, const char* path) {
  float* weights = nullptr;
  CHECK(cudaMalloc(&weights, n * sizeof(float)));
  std::vector<float> host(n);
  CHECK(cudaMemcpy(host.data(), weights, n * sizeof(float), cudaMemcpyDeviceToHost));
  FILE* file = std::fopen(path, "wb");
  std::fwrite(host.data(), sizeof(float), n, file);
  std::fclose(file);
  CHECK(cudaFree(weights));
}
