// Correct: ggml's converters (convert.cu). A launch helper is called by a
// thin wrapper, and a getter returns the wrapper by element type; the op
// calls the pointer it got, and its caller reads the last error after every
// op. The wrapper's calls are the program's own, through the pointer, out of
// sight: the launch is not judged by them.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

template <typename T>
__global__ void widen(const T* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float(x[i]);
}

template <typename T>
static void widen_cuda(const void* x, float* y, int n, int stride, cudaStream_t stream) {
  widen<T><<<(n + 255) / 256, 256, 0, stream>>>(static_cast<const T*>(x) + stride, y, n);
}

template <typename T>
static void widen_cont_cuda(const void* x, float* y, int n, cudaStream_t stream) {
  widen_cuda<T>(x, y, n, 0, stream);
}

using to_float_t = void (*)(const void*, float*, int, cudaStream_t);

static to_float_t get_to_float(int type) {
  switch (type) {
    case 0: return widen_cont_cuda<int>;
    case 1: return &widen_cont_cuda<short>;
    default: return nullptr;
  }
}

static void op_convert(const void* x, float* y, int n, int type, cudaStream_t stream) {
  to_float_t convert = get_to_float(type);
  convert(x, y, n, stream);
}

void compute_forward(const void* x, float* y, int n, int type, cudaStream_t stream) {
  op_convert(x, y, n, type, stream);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    fprintf(stderr, "convert failed\n");
    CUDA_CHECK(err);
  }
}
