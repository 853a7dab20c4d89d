#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Device memory read or written on the host in another function of the file.

static float* make_device_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  return buffer;
}

static void alloc_device(float** out, size_t n) { CHECK(cudaMalloc(out, n * sizeof(float))); }

static void alloc_device_ref(float*& out, size_t n) { CHECK(cudaMalloc(&out, n * sizeof(float))); }

static float host_sum(const float* values, size_t n) {
  float total = 0.0f;
  for (size_t i = 0; i < n; ++i) total += values[i];
  return total;
}

static void print_all(const float* values, size_t n) {
  for (size_t i = 0; i < n; ++i) std::printf("%f\n", host_sum(values + i, 1));
}

static void clear(float* values, size_t n) { std::memset(values, 0, n * sizeof(float)); }

float returned_buffer_read_on_host(size_t n) {
  float* device = make_device_buffer(n);
  const float first = *device;  // CHECK: GD001
  CHECK(cudaFree(device));
  return first;
}

float out_parameter_summed_on_host(size_t n) {
  float* device = nullptr;
  alloc_device(&device, n);
  const float total = host_sum(device, n);  // CHECK: GD001
  CHECK(cudaFree(device));
  return total;
}

void reference_out_parameter_printed(size_t n) {
  float* device = nullptr;
  alloc_device_ref(device, n);
  print_all(device, n);  // CHECK: GD001
  clear(device, n);  // CHECK: GD001
  CHECK(cudaFree(device));
}

// A helper also called rightly: the call with device memory is still wrong.
float summed_twice(size_t n) {
  float* device = make_device_buffer(n);
  float* host = static_cast<float*>(malloc(n * sizeof(float)));
  CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
  const float total = host_sum(host, n) + host_sum(device, n);  // CHECK: GD001
  free(host);
  CHECK(cudaFree(device));
  return total;
}

struct Layer {
  float* d_weights;
  size_t n;
};

static void layer_init(Layer* layer, size_t n) {
  layer->n = n;
  CHECK(cudaMalloc(&layer->d_weights, n * sizeof(float)));
}

float layer_first_weight(const Layer& layer) {
  return layer.d_weights[0];  // CHECK: GD001
}

float layer_total(const Layer* layer) {
  return host_sum(layer->d_weights, layer->n);  // CHECK: GD001
}

void use_layer(size_t n) {
  Layer layer;
  layer_init(&layer, n);
  std::printf("%f %f\n", layer_first_weight(layer), layer_total(&layer));
  CHECK(cudaFree(layer.d_weights));
}
