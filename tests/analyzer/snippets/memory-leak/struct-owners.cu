// Buffers handed to a struct or class: the record's destroy function (or
// destructor) is what frees them, so a field it forgets leaks with every
// object. Owners that do free (a destructor, an RAII holder, a container)
// are not leaks.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

struct Layer {
  float* weights;
  float* bias;
  float* grad;
};

void layer_create(Layer* layer, int n) {
  cudaMalloc(&layer->weights, n * sizeof(float));
  cudaMalloc(&layer->bias, n * sizeof(float));
  cudaMalloc(&layer->grad, n * sizeof(float));  // CHECK: GD007
}

void layer_destroy(Layer* layer) {
  cudaFree(layer->weights);
  cudaFree(layer->bias);
}

class Workspace {
 public:
  explicit Workspace(int n) {
    cudaMalloc(&input_, n * sizeof(float));
    cudaMalloc(&output_, n * sizeof(float));
    float* staging = nullptr;
    cudaMallocHost(&staging, n * sizeof(float));  // CHECK: GD007
    staging_ = staging;
  }
  ~Workspace() {
    cudaFree(input_);
    cudaFree(output_);
  }

 private:
  float* input_ = nullptr;
  float* output_ = nullptr;
  float* staging_ = nullptr;
};

// Correct twins.
struct Model {
  float* weights;
  float* bias;
};

void model_create(Model& model, int n) {
  cudaMalloc(&model.weights, n * sizeof(float));
  cudaMalloc(&model.bias, n * sizeof(float));
}

void model_destroy(Model& model) {
  cudaFree(model.weights);
  cudaFree(model.bias);
}

class Buffer {
 public:
  explicit Buffer(int n) {
    float* data = nullptr;
    cudaMalloc(&data, n * sizeof(float));
    data_ = data;
    cudaMallocHost(&pinned_, n * sizeof(float));
  }
  ~Buffer() {
    cudaFree(data_);
    cudaFreeHost(pinned_);
  }

 private:
  float* data_ = nullptr;
  float* pinned_ = nullptr;
};

// A field released by a helper the destroy function calls.
struct Pair {
  float* first;
  float* second;
};

void release(float* p) { cudaFree(p); }

void pair_create(Pair* pair, int n) {
  cudaMalloc(&pair->first, n * sizeof(float));
  cudaMalloc(&pair->second, n * sizeof(float));
}

void pair_destroy(Pair* pair) {
  cudaFree(pair->first);
  release(pair->second);
}

// Fields freed through a list of their values, and a field of a base class
// freed by the derived class's destructor.
struct Grads {
  float* dw;
  float* db;
  float* dx;
};

void grads_create(Grads* grads, int n) {
  cudaMalloc(&grads->dw, n * sizeof(float));
  cudaMalloc(&grads->db, n * sizeof(float));
  cudaMalloc(&grads->dx, n * sizeof(float));
}

void grads_destroy(Grads* grads) {
  cudaFree(grads->dx);
  float* params[] = {grads->dw, grads->db};
  for (float* p : params) cudaFree(p);
}

struct Base {
  float* shared = nullptr;
  float* own = nullptr;
  ~Base() { cudaFree(own); }
};

struct Derived : Base {
  explicit Derived(int n) {
    cudaMalloc(&own, n * sizeof(float));
    cudaMalloc(&shared, n * sizeof(float));
  }
  ~Derived() { cudaFree(shared); }
};

struct CudaDeleter {
  void operator()(float* p) const { cudaFree(p); }
};

std::unique_ptr<float, CudaDeleter> raii_owner(int n) {
  float* raw = nullptr;
  if (cudaMalloc(&raw, n * sizeof(float)) != cudaSuccess) return nullptr;
  std::unique_ptr<float, CudaDeleter> owner(raw);
  if (n > 1 << 20) return nullptr;  // the owner frees it
  return owner;
}

void container_owner(std::vector<float*>& pool, int n) {
  float* block = nullptr;
  if (cudaMalloc(&block, n * sizeof(float)) != cudaSuccess) return;
  pool.push_back(block);
}

// A function returning fresh device memory: the caller owns it.
float* make_buffer(int n) {
  float* buffer = nullptr;
  if (cudaMalloc(&buffer, n * sizeof(float)) != cudaSuccess) return nullptr;
  return buffer;
}

bool caller_forgets(int n, bool quick) {
  float* scratch = make_buffer(n);  // CHECK: GD007
  if (scratch == nullptr) return false;
  if (quick) return true;
  cudaMemset(scratch, 0, n * sizeof(float));
  cudaFree(scratch);
  return true;
}

bool caller_frees(int n, bool quick) {
  float* scratch = make_buffer(n);
  if (scratch == nullptr) return false;
  if (!quick) cudaMemset(scratch, 0, n * sizeof(float));
  cudaFree(scratch);
  return true;
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
