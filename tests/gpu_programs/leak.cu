// Reproduces GD007 (memory-leak): five cudaMalloc of 4 MiB, never freed;
// they are still live when the process exits.
// A correct program calls cudaFree on each buffer once it is done with it
// (or owns them with a RAII wrapper).
//
// Prints one line and exits 0:
//   leak: 5 cudaMalloc of 4 MiB, 0 freed
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  const int count = 5;
  const std::size_t bytes = std::size_t{4} << 20;
  for (int i = 0; i < count; ++i) {
    void* p = nullptr;
    if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
      std::printf("leak: cudaMalloc failed: %d \"%s\"\n", static_cast<int>(e), cudaGetErrorString(e));
      return 2;
    }
  }  // the mistake: p goes out of scope, the memory stays allocated
  std::printf("leak: %d cudaMalloc of %zu MiB, 0 freed\n", count, bytes >> 20);
  return 0;
}
