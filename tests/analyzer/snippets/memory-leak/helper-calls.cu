// Buffers handed to helpers of the file. A helper that only reads or writes
// through its pointer parameter leaves the buffer the caller's to free; one
// that frees it, or keeps it beyond the call (a global, a member, a
// container, an out-parameter), takes it over. A helper without a body here
// is not judged.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// Other rules are not this file's subject.
// NOLINTBEGIN(unchecked-cuda-error, sync-in-loop)

#define CHECK_CUDA(call)                                      \
  do {                                                        \
    cudaError_t status_ = (call);                             \
    if (status_ != cudaSuccess) {                             \
      fprintf(stderr, "%s\n", cudaGetErrorString(status_));   \
      exit(1);                                                \
    }                                                         \
  } while (0)

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

void upload(float* device, const float* host, int n) {
  CHECK_CUDA(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
}

void launch_saxpy(const float* x, float* y, int n) {
  saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
}

float read_last(const float* y, int n) {
  float last = 0.0f;
  CHECK_CUDA(cudaMemcpy(&last, y + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  return last;
}

// Through two levels of helpers that only use it.
void upload_and_run(float* x, float* y, const float* hx, const float* hy, int n) {
  upload(x, hx, n);
  upload(y, hy, n);
  launch_saxpy(x, y, n);
}

float step_forgets_both(const float* hx, const float* hy, int n) {
  float* x = nullptr;
  float* y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));  // CHECK: GD007
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));  // CHECK: GD007
  upload_and_run(x, y, hx, hy, n);
  float last = read_last(y, n);
  // cudaFree(x);
  // cudaFree(y);
  return last;
}

// Correct twins: the caller frees, or the helper frees or keeps the buffer.
float step_frees_both(const float* hx, const float* hy, int n) {
  float* x = nullptr;
  float* y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  upload_and_run(x, y, hx, hy, n);
  float last = read_last(y, n);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  return last;
}

void release(float* p) { CHECK_CUDA(cudaFree(p)); }

float* g_cache = nullptr;
void keep_in_global(float* p) { g_cache = p; }

struct Pool {
  std::vector<float*> blocks;
  float* current = nullptr;
};
void keep_in_pool(Pool& pool, float* p) { pool.blocks.push_back(p); }
void keep_as_current(Pool* pool, float* p) { pool->current = p; }
void keep_in_out(float** out, float* p) { *out = p; }
void maybe_release(float* p, bool done) {
  if (done) cudaFree(p);
}

void external_consumer(float* p, int n);  // defined in another file

void helpers_take_over(Pool& pool, float** out, bool done, const float* hx, int n) {
  float *a, *b, *c, *d, *e, *f, *g;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&e, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&f, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&g, n * sizeof(float)));
  upload(a, hx, n);
  release(a);
  keep_in_global(b);
  keep_in_pool(pool, c);
  keep_as_current(&pool, d);
  keep_in_out(out, e);
  maybe_release(f, done);
  external_consumer(g, n);
}
// NOLINTEND(unchecked-cuda-error, sync-in-loop)
