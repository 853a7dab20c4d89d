// Row-major batched GEMM through column-major cuBLAS: a row-major C = A B is
// the column-major C^T = B^T A^T, so the operands swap and each keeps its
// own transpose flag; leading dimensions are the row-major row lengths.
#include "cuda/cuda_blas.h"

#include <string>

#include "cuda/cuda_check.h"
#include "gdrt/error.h"

namespace gdrt::cuda {

Blas::Blas(CudaAllocator& allocator, int cc_major)
    : allocator_(allocator),
      // PyTorch's CUBLAS_WORKSPACE_CONFIG defaults: :4096:8 on Hopper, :4096:2:16:8 before.
      workspace_bytes_(cc_major >= 9 ? std::size_t{4096} * 1024 * 8 : std::size_t{4096} * 1024 * 2 + 16 * 1024 * 8) {
  GDRT_CUDA_CHECK(cublasCreate(&handle_));
  // Full float32 products, as the cpu's sgemm: no TF32 tensor-core rounding.
  GDRT_CUDA_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
}

Blas::~Blas() {
  for (auto& [id, p] : workspaces_) allocator_.deallocate(p, id, {});
  if (handle_) (void)cublasDestroy(handle_);
}

void Blas::stream_destroyed(StreamId id) {
  std::lock_guard lock(mutex_);
  auto it = workspaces_.find(id);
  if (it == workspaces_.end()) return;
  allocator_.deallocate(it->second, id, {});
  workspaces_.erase(it);
}

void Blas::matmul(const ops::Matmul& op, StreamId id, cudaStream_t stream) {
  if (op.batch == 0 || op.m == 0 || op.n == 0) return;
  if (op.k == 0) {  // an empty sum: C = beta C, and beta is 0 or 1
    if (op.beta == 0.0)
      GDRT_CUDA_CHECK(cudaMemsetAsync(op.c, 0, static_cast<std::size_t>(op.batch * op.m * op.n) * itemsize(op.dtype),
                                      stream));
    return;
  }
  const auto ta = op.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = op.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int64_t lda = op.trans_a ? op.m : op.k, ldb = op.trans_b ? op.k : op.n, ldc = op.n;
  const std::int64_t stride_a = op.m * op.k, stride_b = op.k * op.n, stride_c = op.m * op.n;
  std::lock_guard lock(mutex_);
  GDRT_CUDA_CHECK(cublasSetStream(handle_, stream));
  auto ws = workspaces_.find(id);
  if (ws == workspaces_.end()) ws = workspaces_.emplace(id, allocator_.allocate(workspace_bytes_, id)).first;
  GDRT_CUDA_CHECK(cublasSetWorkspace(handle_, ws->second, workspace_bytes_));
  if (op.dtype == DType::f32) {
    const float alpha = 1.0f, beta = static_cast<float>(op.beta);
    GDRT_CUDA_CHECK(cublasSgemmStridedBatched_64(
        handle_, tb, ta, op.n, op.m, op.k, &alpha, static_cast<const float*>(op.b), ldb, stride_b,
        static_cast<const float*>(op.a), lda, stride_a, &beta, static_cast<float*>(op.c), ldc, stride_c, op.batch));
  } else if (op.dtype == DType::f64) {
    const double alpha = 1.0, beta = op.beta;
    GDRT_CUDA_CHECK(cublasDgemmStridedBatched_64(
        handle_, tb, ta, op.n, op.m, op.k, &alpha, static_cast<const double*>(op.b), ldb, stride_b,
        static_cast<const double*>(op.a), lda, stride_a, &beta, static_cast<double*>(op.c), ldc, stride_c,
        op.batch));
  } else {
    throw Error("matmul supports float32 and float64, got " + std::string(dtype_name(op.dtype)));
  }
}

}  // namespace gdrt::cuda
