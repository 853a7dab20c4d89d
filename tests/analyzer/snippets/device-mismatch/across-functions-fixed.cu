#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

static float* make_device_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  return buffer;
}

static float* make_host_buffer(size_t n) { return static_cast<float*>(malloc(n * sizeof(float))); }

static void alloc_device(float** out, size_t n) { CHECK(cudaMalloc(out, n * sizeof(float))); }

static float host_sum(const float* values, size_t n) {
  float total = 0.0f;
  for (size_t i = 0; i < n; ++i) total += values[i];
  return total;
}

__global__ void scale(float* values, size_t n) {
  const size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] *= 2.0f;
}

// Work on the device pointer stays on the device; only addresses are computed on the host.
static void scale_on_device(float* values, size_t n) {
  scale<<<(n + 255) / 256, 256>>>(values, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemset(&values[0], 0, sizeof(float)));
}

float copied_back_then_summed(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  scale_on_device(device, n);
  CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
  const float total = host_sum(host, n);
  free(host);
  CHECK(cudaFree(device));
  return total;
}

float out_parameter_copied(size_t n) {
  float* device = nullptr;
  alloc_device(&device, n);
  float first = 0.0f;
  CHECK(cudaMemcpy(&first, &device[0], sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(device));
  return first;
}

// Tricky negative: the helper reassigns its parameter before reading it, so
// what it dereferences is not what the caller passed.
static float sum_staged(const float* values, size_t n) {
  float* staged = make_host_buffer(n);
  CHECK(cudaMemcpy(staged, values, n * sizeof(float), cudaMemcpyDeviceToHost));
  values = staged;
  const float total = values[0];
  free(staged);
  return total;
}

float staged(size_t n) {
  float* device = make_device_buffer(n);
  const float total = sum_staged(device, n);
  CHECK(cudaFree(device));
  return total;
}

// Tricky negative: a __host__ __device__ helper called from a kernel reads
// device memory on the device.
__host__ __device__ float first_of(const float* values) { return values[0]; }

__global__ void first_kernel(const float* values, float* out) { *out = first_of(values); }

struct Layer {
  float* d_weights;
  float* h_weights;
  size_t n;
};

static void layer_init(Layer* layer, size_t n) {
  layer->n = n;
  CHECK(cudaMalloc(&layer->d_weights, n * sizeof(float)));
  layer->h_weights = make_host_buffer(n);
}

float layer_total(Layer* layer) {
  CHECK(cudaMemcpy(layer->h_weights, layer->d_weights, layer->n * sizeof(float), cudaMemcpyDeviceToHost));
  return host_sum(layer->h_weights, layer->n) + layer->h_weights[0];
}

// Tricky negative: the same field holds device memory in one object and
// host memory in another.
struct View {
  float* data;
};

float view_first(size_t n) {
  View on_device{make_device_buffer(n)};
  View on_host{make_host_buffer(n)};
  const float first = on_host.data[0];
  CHECK(cudaFree(on_device.data));
  free(on_host.data);
  return first;
}

void use_layer(size_t n) {
  Layer layer;
  layer_init(&layer, n);
  std::printf("%f\n", layer_total(&layer));
  CHECK(cudaFree(layer.d_weights));
  free(layer.h_weights);
}
