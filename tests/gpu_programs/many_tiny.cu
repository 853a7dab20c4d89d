// Reproduces GD005 (scalar-indexing): a loop reads a device array one element
// at a time, 2000 cudaMemcpy of 4 bytes device-to-host. Each read pays a
// whole blocking round trip (about 9 us on an H100) to move 4 bytes.
// A correct program copies the 2000 elements in one cudaMemcpy (or reduces
// them on the device and copies the result).
//
// Prints one line and exits 0:
//   many_tiny: 2000 reads of 4 B, 9.1 us per read, sum 2000
// The device buffer is not freed.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "check.h"

constexpr const char* kProgram = "many_tiny";

int main() {
  const int n = 1 << 20;
  const int reads = 2000;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  fill<<<(n + 255) / 256, 256>>>(d, n, 1.0f);

  double sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reads; ++i) {
    float v = 0;
    CHECK(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost));  // the mistake: one element per copy
    sum += v;
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("many_tiny: %d reads of %zu B, %.1f us per read, sum %.0f\n", reads, sizeof(float), us / reads, sum);
  return 0;
}
