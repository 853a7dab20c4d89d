// Reproduces the launch half of GD006 (unchecked-cuda-error): a kernel is
// launched with 4096 threads per block, more than any GPU allows. The launch
// never starts, and its error goes only to the thread's last error: the
// checked synchronisation and the blocking copy that follow both succeed,
// and the buffer the kernel was to fill keeps what it held. Only
// cudaGetLastError reports it (1 "invalid argument" on an H100, CUDA 13).
// This is why gpulint asks for cudaGetLastError after a launch and does not
// count a checked synchronisation as checking it.
// A correct program reads cudaGetLastError (CUDA_CHECK(cudaGetLastError()))
// right after the launch, and keeps blocks within maxThreadsPerBlock.
//
// Prints one line and exits 0:
//   bad_launch: sync 0 "no error", copy 0 "no error", last error 1
//   cudaErrorInvalidValue "invalid argument", buffer unchanged 4096/4096
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "check.h"

constexpr const char* kProgram = "bad_launch";

int main() {
  const int n = 4096;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemset(d, 0, n * sizeof(float)));
  fill<<<1, n>>>(d, n, 1.0f);  // the mistake: 4096 threads in one block
  const cudaError_t sync = cudaDeviceSynchronize();
  std::vector<float> host(n, -1.0f);
  const cudaError_t copy = cudaMemcpy(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  const cudaError_t last = cudaGetLastError();
  int unchanged = 0;
  for (float v : host) unchanged += v == 0.0f;
  std::printf("bad_launch: sync %d \"%s\", copy %d \"%s\", last error %d %s \"%s\", buffer unchanged %d/%d\n",
              static_cast<int>(sync), cudaGetErrorString(sync), static_cast<int>(copy), cudaGetErrorString(copy),
              static_cast<int>(last), cudaGetErrorName(last), cudaGetErrorString(last), unchanged, n);
  CHECK(cudaFree(d));
  return 0;
}
