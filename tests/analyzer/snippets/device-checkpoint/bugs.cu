#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void save_weights(int n, const char* path) {
  float* weights = nullptr;
  CHECK(cudaMalloc(&weights, n * sizeof(float)));
  FILE* file = std::fopen(path, "wb");
  std::fwrite(weights, sizeof(float), n, file);  // CHECK: GD012
  std::fclose(file);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(weights), n * sizeof(float));  // CHECK: GD012
  CHECK(cudaFree(weights));
}
