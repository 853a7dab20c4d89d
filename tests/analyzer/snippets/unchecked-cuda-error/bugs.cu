#include <cuda_runtime.h>
#include <pthread.h>
#include <cstdlib>
#include <thread>

__global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f;
}

void ignores_everything(int n) {
  float* d = nullptr;
  cudaMalloc(&d, n * sizeof(float));  // CHECK: GD006
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  cudaDeviceSynchronize();  // CHECK: GD006
  cudaFree(d);  // CHECK: GD006
}

// A macro that does not look at the status is no check.
#define TRY(call) call
void macro_that_discards(float* d) {
  TRY(cudaMemset(d, 0, 16));  // CHECK: GD006
}

// A checked synchronisation or blocking copy reports a fault inside the
// kernel, but a launch that never started leaves its error only in the last
// error, which nothing reads here.
void checked_only_by_synchronisation(float* d, float* host, int n) {
  fill<<<1, 4096>>>(d, n);  // CHECK: GD006
  if (cudaDeviceSynchronize() != cudaSuccess) std::abort();
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  if (cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) std::abort();
}

// `cudaGetLastError();` as a statement clears the error without reading it.
void clears_unread(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  cudaGetLastError();
}

// Two calls below the step, and the step checks nothing either.
static void launch_fill_deep(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
}
static void forward_layer(float* d, int n) { launch_fill_deep(d, n); }
static void step_checks_nothing(float* d, int n) { forward_layer(d, n); }
void train(float* d, int n) {
  step_checks_nothing(d, n);
  if (cudaGetLastError() != cudaSuccess) std::abort();
  step_checks_nothing(d, n);
}

// Handed to a benchmark harness, and also called directly with nothing
// after it: the direct call is in sight, and unchecked.
static void launch_fill_benchmarked(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
}
template <typename Launch>
static void repeat(Launch launch, float* d, int n) { launch(d, n); }
void validate_then_benchmark(float* d, int n) {
  launch_fill_benchmarked(d, n);
  repeat(launch_fill_benchmarked, d, n);
}

// A frame callback handed to a GUI library, whose loop calls it and reads no
// CUDA error: the launch helper under it is unchecked.
void register_display_callback(void (*callback)());
static float* g_frame = nullptr;
static void launch_fill_frame() {
  fill<<<1, 256>>>(g_frame, 256);  // CHECK: GD006
}
static void display() { launch_fill_frame(); }
void start_gui() { register_display_callback(display); }

// Handed to a harness, which calls it out of sight: its own launch is the
// harness's to check, but a helper it calls starts no harness of its own.
static void launch_fill_inner(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
}
static void launch_fill_outer(float* d, int n) {
  launch_fill_inner(d, n);
  fill<<<1, 256>>>(d, n);
}
void harness(float* d, int n) { repeat(launch_fill_outer, d, n); }

// Nine calls below the check, past the eight followed; a launch three calls
// below the same check, through one of those functions, is checked.
static void launch_deep(float* d) {
  fill<<<1, 256>>>(d, 1);  // CHECK: GD006
}
static void deep1(float* d) { launch_deep(d); }
static void deep2(float* d) { deep1(d); }
static void deep3(float* d) { deep2(d); }
static void deep4(float* d) { deep3(d); }
static void deep5(float* d) { deep4(d); }
static void deep6(float* d) { deep5(d); }
static void launch_shallow(float* d) { fill<<<1, 256>>>(d, 1); }
static void deep7(float* d) {
  deep6(d);
  launch_shallow(d);
}
static void deep_top(float* d) { deep7(d); }
void deep_main(float* d) {
  deep_top(d);
  if (cudaGetLastError() != cudaSuccess) std::abort();
}

// Launches on a worker thread: the last error is per host thread, so the
// check after join() reads this thread's, not the worker's.
void launch_on_a_worker(float* d, int n) {
  std::thread worker([=] {
    fill<<<1, 256>>>(d, n);  // CHECK: GD006
  });
  worker.join();
  if (cudaGetLastError() != cudaSuccess) std::abort();
}
static void launch_fill_worker(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
}
void start_worker(float* d, int n) {
  std::thread worker(launch_fill_worker, d, n);
  worker.join();
  if (cudaGetLastError() != cudaSuccess) std::abort();
}
// The same with POSIX threads: pthread_join leaves the worker's error there.
static void* fill_thread(void* d) {
  fill<<<1, 256>>>(static_cast<float*>(d), 256);  // CHECK: GD006
  return nullptr;
}
void start_pthread(float* d) {
  pthread_t worker;
  if (pthread_create(&worker, nullptr, fill_thread, d) != 0) std::abort();
  pthread_join(worker, nullptr);
  if (cudaGetLastError() != cudaSuccess) std::abort();
}
