#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

static float* make_device_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  return buffer;
}

static void write_raw(const float* data, size_t n, FILE* file) { std::fwrite(data, sizeof(float), n, file); }

static void save_array(const char* path, const float* data, size_t n) {
  FILE* file = std::fopen(path, "wb");
  if (file == nullptr) return;
  write_raw(data, n, file);
  std::fclose(file);
}

// Copies to the host before writing: device memory is fine here.
static void save_device_array(const char* path, const float* device, size_t n) {
  std::vector<float> host(n);
  CHECK(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  save_array(path, host.data(), n);
}

void checkpoint(size_t n) {
  float* weights = make_device_buffer(n);
  save_device_array("weights.bin", weights, n);
  float* host = static_cast<float*>(malloc(n * sizeof(float)));
  CHECK(cudaMemcpy(host, weights, n * sizeof(float), cudaMemcpyDeviceToHost));
  save_array("weights2.bin", host, n);
  free(host);
  CHECK(cudaFree(weights));
}

// Tricky negative: the helper writes a host copy it made itself, not its parameter.
static void save_staged(const char* path, const float* data, size_t n) {
  float* staged = static_cast<float*>(malloc(n * sizeof(float)));
  CHECK(cudaMemcpy(staged, data, n * sizeof(float), cudaMemcpyDeviceToHost));
  data = staged;
  save_array(path, data, n);
  free(staged);
}

struct Model {
  float* d_params;
  float* h_params;
  size_t count;
};

static void model_init(Model* model, size_t count) {
  model->count = count;
  CHECK(cudaMalloc(&model->d_params, count * sizeof(float)));
  CHECK(cudaMallocHost(&model->h_params, count * sizeof(float)));
}

void model_save(const Model& model, const char* path) {
  CHECK(cudaMemcpy(model.h_params, model.d_params, model.count * sizeof(float), cudaMemcpyDeviceToHost));
  save_array(path, model.h_params, model.count);
  save_staged(path, model.d_params, model.count);
}

void train(size_t count) {
  Model model;
  model_init(&model, count);
  model_save(model, "model.bin");
  CHECK(cudaFree(model.d_params));
  CHECK(cudaFreeHost(model.h_params));
}
