// Reproduces GD001 (device-mismatch): a kernel is launched on a malloc'd host
// array of 1M floats. The launch succeeds; the kernel's first access faults,
// and cudaDeviceSynchronize returns 700 "an illegal memory access was
// encountered". The host array is left unchanged, and the context is lost.
// Unless the GPU reaches pageable host memory (HMM, pageable memory access 1),
// where the kernel runs on the host pages and the fault does not happen.
// A correct program copies the array into cudaMalloc memory (or allocates it
// with cudaMallocHost/cudaMallocManaged) and launches on that.
//
// Prints one line:
//   host_ptr_kernel: launch 0 "no error", sync 700 "an illegal memory access
//   was encountered", pageable memory access 0, host array unchanged 1048576/1048576
// Exit status: 1 when the synchronisation reported an error (it prints it), 0
// when the kernel ran. The host array is not freed (the context is lost).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  const int n = 1 << 20;
  auto* host = static_cast<float*>(std::malloc(n * sizeof(float)));
  for (int i = 0; i < n; ++i) host[i] = 1.0f;

  scale<<<(n + 255) / 256, 256>>>(host, n);  // the mistake: a host pointer
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  const char* launch_text = cudaGetErrorString(launch);
  const char* sync_text = cudaGetErrorString(sync);
  int pageable_access = -1;
  if (cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, 0) != cudaSuccess) pageable_access = -1;

  int unchanged = 0;
  for (int i = 0; i < n; ++i) unchanged += host[i] == 1.0f;
  std::printf("host_ptr_kernel: launch %d \"%s\", sync %d \"%s\", pageable memory access %d, host array unchanged %d/%d\n",
              static_cast<int>(launch), launch_text, static_cast<int>(sync), sync_text, pageable_access, unchanged, n);
  return launch != cudaSuccess || sync != cudaSuccess ? 1 : 0;
}
