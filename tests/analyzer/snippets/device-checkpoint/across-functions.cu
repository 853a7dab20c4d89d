#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Device memory handed to a helper of the file that writes it to a file.

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

static void save_text(const char* path, const float* data, size_t n) {
  std::ofstream out(path);
  for (size_t i = 0; i < n; ++i) out << data[i] << '\n';
}

static void save_stream(std::ofstream& out, const float* data, size_t n) {
  out.write(reinterpret_cast<const char*>(data), n * sizeof(float));
}

void checkpoint(size_t n) {
  float* weights = make_device_buffer(n);
  save_array("weights.bin", weights, n);  // CHECK: GD012
  save_text("weights.txt", weights, n);  // CHECK: GD012
  std::ofstream out("weights.raw", std::ios::binary);
  save_stream(out, weights + n / 2, n / 2);  // CHECK: GD012
  CHECK(cudaFree(weights));
}

struct Model {
  float* d_params;
  size_t count;
};

static void model_init(Model* model, size_t count) {
  model->count = count;
  CHECK(cudaMalloc(&model->d_params, count * sizeof(float)));
}

void model_save(const Model& model, const char* path) {
  FILE* file = std::fopen(path, "wb");
  if (file == nullptr) return;
  std::fwrite(model.d_params, sizeof(float), model.count, file);  // CHECK: GD012
  std::fclose(file);
}

void model_save_through_helper(const Model& model, const char* path) {
  save_array(path, model.d_params, model.count);  // CHECK: GD012
}

void train(size_t count) {
  Model model;
  model_init(&model, count);
  model_save(model, "model.bin");
  model_save_through_helper(model, "model2.bin");
  CHECK(cudaFree(model.d_params));
}
