// ops::Matmul on cuBLAS: one handle per device, bound to the launch's stream
// each time (a handle is not safe to share between threads, hence the lock).
#pragma once

#include <cublas_v2.h>

#include <mutex>

#include "gdrt/kernel_op.h"

namespace gdrt::cuda {

class Blas {
 public:
  Blas();
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  void matmul(const ops::Matmul& op, cudaStream_t stream);

 private:
  std::mutex mutex_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace gdrt::cuda
