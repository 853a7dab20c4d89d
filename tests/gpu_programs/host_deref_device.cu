// Reproduces GD001 (device-mismatch): the host reads d[0] through a pointer
// returned by cudaMalloc. Device memory is not mapped in the host's address
// space, so the read dies of SIGSEGV (exit status 139 from a shell).
// A correct program copies the value to the host first:
//   float v; cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
//
// Prints one line before the read, and nothing after it when the read faults:
//   host_deref_device: reading d[0] of a 4 MiB cudaMalloc buffer on the host
// Were the read to succeed (a system where the host maps device memory), it
// prints "host_deref_device: no fault, d[0] = <v>" and exits 1.
// The buffer is never freed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

int main() {
  const int n = 1 << 20;
  float* d = nullptr;
  if (const cudaError_t e = cudaMalloc(&d, n * sizeof(float)); e != cudaSuccess) {
    std::printf("host_deref_device: cudaMalloc failed: %d \"%s\"\n", static_cast<int>(e), cudaGetErrorString(e));
    return 2;
  }
  std::printf("host_deref_device: reading d[0] of a 4 MiB cudaMalloc buffer on the host\n");
  std::fflush(stdout);
  const float v = *static_cast<volatile float*>(d);  // the mistake: SIGSEGV here
  std::printf("host_deref_device: no fault, d[0] = %g\n", static_cast<double>(v));
  return 1;
}
