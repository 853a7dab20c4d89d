#include <cuda_runtime.h>
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <thread>

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s\n", cudaGetErrorString(err_));                  \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) std::fprintf(stderr, "%s failed\n", what);
}

static void check_launch(const char* what) { check(cudaGetLastError(), what); }

__global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f;
}

void checked(int n) {
  float* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
  fill<<<1, 256>>>(d, n);
  CUDA_CHECK(cudaGetLastError());
  check(cudaDeviceSynchronize(), "sync");
  if (cudaFree(d) != cudaSuccess) std::exit(1);
}

// Tricky negatives: a wrapper function that checks the last error, an explicit
// (void) discard, one read of the last error after a launch loop (a failed
// launch's error stays there until it is read).
void wrapper_checks(float* d, int n) {
  fill<<<1, 256>>>(d, n);
  check_launch("fill");
  (void)cudaFree(nullptr);
  for (int i = 0; i < 3; ++i) fill<<<1, 256>>>(d, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

// A launch helper whose every caller checks.
static void launch_fill(float* d, int n) { fill<<<1, 256>>>(d, n); }
void caller_checks(float* d, int n) {
  launch_fill(d, n);
  CUDA_CHECK(cudaPeekAtLastError());
}

// A launch helper handed to a harness as a function pointer: its callers are
// out of sight, so it is not judged.
static void launch_fill_ptr(float* d, int n) { fill<<<1, 256>>>(d, n); }
template <typename Launch>
float time_it(Launch launch, float* d, int n) {
  launch(d, n);
  return 0.0f;
}
float bench(float* d, int n) { return time_it(launch_fill_ptr, d, n); }

// A launch helper two calls below the function that checks: the layer in
// between checks nothing, and needs not.
static void launch_fill_deep(float* d, int n) { fill<<<1, 256>>>(d, n); }
static void forward_layer(float* d, int n) { launch_fill_deep(d, n); }
void step_checks(float* d, int n) {
  forward_layer(d, n);
  CUDA_CHECK(cudaGetLastError());
}

// Called from a template: the instantiation's call is the one that runs.
static void launch_fill_templated(float* d, int n) { fill<<<1, 256>>>(d, n); }
template <int N>
void steps(float* d, int n) {
  for (int i = 0; i < N; ++i) launch_fill_templated(d, n);
}
void run_steps(float* d, int n) {
  steps<4>(d, n);
  CUDA_CHECK(cudaGetLastError());
}

// A recursive launch helper, judged by its one call from outside.
static void fill_levels(float* d, int n, int levels) {
  fill<<<1, 256>>>(d, n);
  if (levels > 0) fill_levels(d, n, levels - 1);
}
void run_levels(float* d, int n) {
  fill_levels(d, n, 4);
  CUDA_CHECK(cudaGetLastError());
}

// The same helper visible to other files, which are asked about it too: its
// call of itself is not one of the calls they are told of.
void fill_levels_shared(float* d, int n, int levels) {
  fill<<<1, 256>>>(d, n);
  if (levels > 0) fill_levels_shared(d, n, levels - 1);
}
void run_levels_shared(float* d, int n) {
  fill_levels_shared(d, n, 4);
  CUDA_CHECK(cudaGetLastError());
}

// A layer's launches, run through its base class and checked there.
struct Layer {
  virtual ~Layer() = default;
  virtual void forward(float* d, int n) = 0;
};
struct FillLayer : Layer {
  void forward(float* d, int n) override { fill<<<1, 256>>>(d, n); }
};
void run_layer(Layer& layer, float* d, int n) {
  layer.forward(d, n);
  CUDA_CHECK(cudaGetLastError());
}

// A container layer runs its children through the base class, and the
// caller checks after the container: every launch below it is checked.
struct Sequential : Layer {
  Layer* children[2] = {};
  void forward(float* d, int n) override {
    for (Layer* child : children) child->forward(d, n);
  }
};
struct ScaledFill : FillLayer {
  void forward(float* d, int n) override { FillLayer::forward(d, n); }
};
void run_model(float* d, int n) {
  FillLayer fill_layer;
  ScaledFill scaled;
  Sequential net;
  net.children[0] = &fill_layer;
  net.children[1] = &scaled;
  net.forward(d, n);
  CUDA_CHECK(cudaGetLastError());
}

// A worker thread that reads its own last error.
void launch_on_a_checking_worker(float* d, int n) {
  std::thread worker([=] {
    fill<<<1, 256>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
  });
  worker.join();
}

// A POSIX thread that reads its own last error.
static void* fill_checking_thread(void* d) {
  fill<<<1, 256>>>(static_cast<float*>(d), 256);
  CUDA_CHECK(cudaGetLastError());
  return nullptr;
}
void start_checking_pthread(float* d) {
  pthread_t worker;
  if (pthread_create(&worker, nullptr, fill_checking_thread, d) != 0) std::abort();
  pthread_join(worker, nullptr);
}
