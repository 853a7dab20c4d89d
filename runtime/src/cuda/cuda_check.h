// Status checks for the CUDA runtime, cuBLAS and cuDNN: every call the cuda
// backend makes goes through one of these, so a failure surfaces as a
// gdrt::Error naming the call, the error's name and its description instead
// of a silently wrong result later.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace gdrt::cuda {

[[noreturn]] void throw_cuda(cudaError_t status, const char* call);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call);
[[noreturn]] void throw_cudnn(cudnnStatus_t status, const char* call);

inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw_cuda(status, call);
}
inline void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas(status, call);
}
inline void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn(status, call);
}

// A kernel launch reports configuration errors only through the last error.
void check_launch(const char* kernel);

// Makes `device` current for the calling thread: the backend may be called
// from any thread, and a thread's current device is its own.
void use_device(int device);

}  // namespace gdrt::cuda

#define GDRT_CUDA_CHECK(call) ::gdrt::cuda::check((call), #call)
