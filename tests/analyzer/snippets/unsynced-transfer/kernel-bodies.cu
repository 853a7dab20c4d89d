// Which arguments a launch writes, read from the kernel's body: stores
// through the parameter, through a local pointer into it, in a device
// function it is handed to, by an atomic; a kernel whose body is not in the
// file is taken to write through its non-const pointer parameters.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

struct Stats {
  float sum;
  int count;
};

__device__ void store_at(float* where, int i, float value) { where[i] = value; }

__global__ void through_device_function(float* out) { store_at(out, threadIdx.x, 1.0f); }
__global__ void through_atomic(float* total, const float* in) { atomicAdd(total, in[threadIdx.x]); }
__global__ void through_row_pointer(float* matrix, int width) {
  float* row = matrix + blockIdx.x * width;
  row[threadIdx.x] *= 2.0f;
}
__global__ void through_member(Stats* stats) { stats->count++; }
template <typename T>
__global__ void templated(T* out) {
  *(out + threadIdx.x) = T(0);
}
// Compiled in another file (relocatable device code).
__global__ void defined_elsewhere(float* out, const float* in);

float* managed_buffer(int n) {
  float* buffer = nullptr;
  CHECK(cudaMallocManaged(&buffer, n * sizeof(float)));
  return buffer;
}

float stores_in_device_function(int n, cudaStream_t stream) {
  float* out = managed_buffer(n);
  through_device_function<<<1, 256, 0, stream>>>(out);
  CHECK(cudaGetLastError());
  const float first = out[0];  // CHECK: GD003
  CHECK(cudaFree(out));
  return first;
}

float stores_by_atomic(const float* in, cudaStream_t stream) {
  float* total = managed_buffer(1);
  through_atomic<<<1, 256, 0, stream>>>(total, in);
  CHECK(cudaGetLastError());
  const float sum = *total;  // CHECK: GD003
  CHECK(cudaFree(total));
  return sum;
}

float stores_through_row(int width, cudaStream_t stream) {
  float* matrix = managed_buffer(width * 16);
  through_row_pointer<<<16, width, 0, stream>>>(matrix, width);
  CHECK(cudaGetLastError());
  const float corner = matrix[0];  // CHECK: GD003
  CHECK(cudaFree(matrix));
  return corner;
}

int stores_through_member(cudaStream_t stream) {
  Stats* stats = nullptr;
  CHECK(cudaMallocHost(&stats, sizeof(Stats)));
  through_member<<<1, 32, 0, stream>>>(stats);
  CHECK(cudaGetLastError());
  const int count = stats[0].count;  // CHECK: GD003
  CHECK(cudaFreeHost(stats));
  return count;
}

float stores_in_template(int n, cudaStream_t stream) {
  float* out = managed_buffer(n);
  templated<<<1, 256, 0, stream>>>(out);
  CHECK(cudaGetLastError());
  const float first = out[0];  // CHECK: GD003
  CHECK(cudaFree(out));
  return first;
}

float body_not_in_this_file(const float* in, int n, cudaStream_t stream) {
  float* out = managed_buffer(n);
  defined_elsewhere<<<1, 256, 0, stream>>>(out, in);
  CHECK(cudaGetLastError());
  const float first = out[0];  // CHECK: GD003 (taken to write: no body here)
  CHECK(cudaFree(out));
  return first;
}
