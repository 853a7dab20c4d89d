// The error messages of cuda_check.h: the failing call as written, the
// library's name for the status and its description.
#include "cuda/cuda_check.h"

#include <string>

#include "gdrt/error.h"

namespace gdrt::cuda {

void throw_cuda(cudaError_t status, const char* call) {
  // Clears the error so a later, unrelated call does not report it again
  // (sticky errors stay, as they must).
  (void)cudaGetLastError();
  throw Error(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void throw_cublas(cublasStatus_t status, const char* call) {
  throw Error(std::string(call) + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
              ")");
}

void throw_cudnn(cudnnStatus_t status, const char* call) {
  // cudnnGetLastErrorString has the detail (which descriptor was bad).
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string message = std::string(call) + " failed: " + cudnnGetErrorString(status);
  if (detail[0]) message += std::string(" (") + detail + ")";
  throw Error(message);
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(std::string("launch of ") + kernel + " failed: " + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ")");
}

void use_device(int device) {
  int current = -1;
  GDRT_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) GDRT_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace gdrt::cuda
