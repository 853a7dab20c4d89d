// Bug: the same wrapper around a launch helper, but handed to a library as a
// frame callback (an argument, not a getter's return value): the library's
// loop calls it and reads no CUDA error, so the launch is never checked.
#include <cuda_runtime.h>

template <typename T>
__global__ void widen(const T* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float(x[i]);
}

template <typename T>
static void widen_cuda(const void* x, float* y, int n, int stride, cudaStream_t stream) {
  widen<T><<<(n + 255) / 256, 256, 0, stream>>>(static_cast<const T*>(x) + stride, y, n);  // CHECK: GD006
}

template <typename T>
static void widen_cont_cuda(const void* x, float* y, int n, cudaStream_t stream) {
  widen_cuda<T>(x, y, n, 0, stream);
}

using to_float_t = void (*)(const void*, float*, int, cudaStream_t);
void register_frame_callback(to_float_t callback);

void start() { register_frame_callback(widen_cont_cuda<int>); }
