// Reproduces GD008 (out-of-memory): one cudaMalloc of 1 TiB, far more than
// any GPU has. It returns error 2, cudaErrorMemoryAllocation, "out of memory".
// The program checks it, prints it and clears it with cudaGetLastError, so
// the error is handled, not ignored (no GD006).
// A correct program asks for what the device can hold (cudaMemGetInfo tells
// how much is free) or splits the work into pieces that fit.
//
// Prints one line and exits 0:
//   oom: cudaMalloc of 1 TiB returned 2 cudaErrorMemoryAllocation "out of memory", cleared 2
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::size_t{1} << 40);
  const char* text = cudaGetErrorString(e);
  const char* name = cudaGetErrorName(e);
  const cudaError_t last = cudaGetLastError();  // reads and clears the error
  std::printf("oom: cudaMalloc of 1 TiB returned %d %s \"%s\", cleared %d\n", static_cast<int>(e), name, text,
              static_cast<int>(last));
  return 0;
}
