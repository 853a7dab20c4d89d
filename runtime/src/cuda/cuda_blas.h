// ops::Matmul on cuBLAS: one handle per device, bound to the launch's stream
// each time (a handle is not safe to share between threads, hence the lock),
// with a workspace of its own per stream: cublasSetStream falls back to the
// handle's one default workspace, which kernels on two streams would share
// while both run (PyTorch keeps one per handle and stream for this reason).
#pragma once

#include <cublas_v2.h>

#include <map>
#include <mutex>

#include "cuda/cuda_allocator.h"

#include "gdrt/kernel_op.h"

namespace gdrt::cuda {

class Blas {
 public:
  // `cc_major` sizes the workspaces as PyTorch does (Hopper's kernels want more).
  Blas(CudaAllocator& allocator, int cc_major);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  void matmul(const ops::Matmul& op, StreamId id, cudaStream_t stream);
  // Gives back the stream's workspace (before the stream is destroyed).
  void stream_destroyed(StreamId id);

 private:
  CudaAllocator& allocator_;
  std::size_t workspace_bytes_;
  std::mutex mutex_;
  cublasHandle_t handle_ = nullptr;
  std::map<StreamId, void*> workspaces_;
};

}  // namespace gdrt::cuda
