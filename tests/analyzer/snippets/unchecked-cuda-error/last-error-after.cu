// A runtime call whose own status is dropped but whose failure the next
// statements read from the thread's last error: a failed runtime call leaves
// its status there until cudaGetLastError() reads it, so it is checked.
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>

#define CHECK_LAST_ERROR()                                                     \
  {                                                                            \
    cudaError_t e_ = cudaGetLastError();                                       \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("failed: %s\n", cudaGetErrorString(e_));                     \
      std::exit(1);                                                            \
    }                                                                          \
  }

static inline void last_error_or_die(const char* what) {
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("%s failed\n", what);
    std::exit(1);
  }
}

void checked_by_the_next_statement(float** d, cudaStream_t* s, size_t n) {
  cudaMalloc(d, n);
  CHECK_LAST_ERROR();
  // Several calls, then one check of all of them.
  cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
  cudaMemset(*d, 0, n);
  CHECK_LAST_ERROR();
  cudaMemsetAsync(*d, 1, n, *s);
  size_t pitch = n * 4;  // calls nothing: the check is still the next thing done
  last_error_or_die("memset");
  (void)pitch;
}

static float host_work(float x) { return x * 2; }

// Cleared without a look, read only after other work (where it surfaces as
// someone else's error), never read, or a library status that never
// reaches the runtime's last error: still unchecked.
void not_checked(float* d, size_t n, cublasHandle_t handle) {
  cudaMemset(d, 0, n);  // CHECK: GD006
  cudaGetLastError();
  CHECK_LAST_ERROR();
  cudaMemset(d, 2, n);  // CHECK: GD006
  float y = host_work(1.0f);
  last_error_or_die("later");
  cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST);  // CHECK: GD006
  last_error_or_die("cublas");
  cudaMemset(d, 1, n);  // CHECK: GD006
  (void)y;
}
