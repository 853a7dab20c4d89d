// Launches that do not write the memory the host reads: a const parameter,
// a parameter the body only reads, a kernel that writes another argument,
// memory the kernel cannot reach (pageable), a volatile latch the host and
// the kernel share while it runs.
#include <cuda_runtime.h>
#include <cstdlib>
#include <thread>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__device__ float load_at(const float* where, int i) { return where[i]; }

__global__ void scale(const float* in, float* out, float factor) {
  out[threadIdx.x] = in[threadIdx.x] * factor;
}
__global__ void reads_only(float* in, float* out) {
  const float* row = in + blockIdx.x * blockDim.x;
  out[threadIdx.x] = load_at(row, threadIdx.x) + in[0];
}
// Compiled in another file: a const pointee is never written, whatever the body.
__global__ void defined_elsewhere(const float* in, float* out);
// Compiled in another file: spins until the host sets the latch. A volatile
// pointee is memory shared with the host while the kernel runs, on purpose.
__global__ void wait_for_release(volatile unsigned* latch);

float* managed_buffer(int n) {
  float* buffer = nullptr;
  CHECK(cudaMallocManaged(&buffer, n * sizeof(float)));
  return buffer;
}

float const_parameter(float* device_out, int n, cudaStream_t stream) {
  float* in = managed_buffer(n);
  scale<<<1, 256, 0, stream>>>(in, device_out, 2.0f);
  CHECK(cudaGetLastError());
  const float first = in[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(in));
  return first;
}

float parameter_only_read(float* device_out, int n, cudaStream_t stream) {
  float* in = managed_buffer(n);
  reads_only<<<1, 256, 0, stream>>>(in, device_out);
  CHECK(cudaGetLastError());
  const float first = in[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(in));
  return first;
}

float const_parameter_without_body(float* device_out, int n, cudaStream_t stream) {
  float* in = managed_buffer(n);
  defined_elsewhere<<<1, 256, 0, stream>>>(in, device_out);
  CHECK(cudaGetLastError());
  const float first = in[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(in));
  return first;
}

// The kernel writes device memory; the host reads the managed input.
float reads_the_input_not_the_output(float* device_out, int n, cudaStream_t stream) {
  float* in = managed_buffer(n);
  float* out = managed_buffer(n);
  scale<<<1, 256, 0, stream>>>(in, device_out, 2.0f);
  CHECK(cudaGetLastError());
  const float first = out[0] + in[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return first;
}

// A vector's elements are pageable: no kernel reaches them (without HMM),
// which GD001 reports at the launch; the read is not GD003's.
float pageable_memory(int n, cudaStream_t stream) {
  std::vector<float> host(n);
  float* out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  scale<<<1, 256, 0, stream>>>(out, host.data(), 2.0f);  // CHECK: GD001
  CHECK(cudaGetLastError());
  const float first = host[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(out));
  return first;
}

// The host releases the kernel it launched by writing the latch.
void release_a_spinning_kernel(cudaStream_t stream) {
  unsigned* latch = nullptr;
  CHECK(cudaMallocHost(&latch, sizeof(unsigned)));
  *latch = 0;
  wait_for_release<<<1, 1, 0, stream>>>(latch);
  CHECK(cudaGetLastError());
  std::this_thread::yield();
  *latch = 1;
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(latch));
}
