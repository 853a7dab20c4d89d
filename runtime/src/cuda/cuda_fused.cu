// Fused kernels: relu's gradient and the Adam update in one pass each,
// with the cpu's formulas (ops/scalar_elementwise.h, ops/scalar_optim.h).
#include "cuda/cuda_common.cuh"
#include "ops/scalar_elementwise.h"
#include "ops/scalar_optim.h"

namespace gdrt::cuda {
namespace {

__global__ void relu_backward_kernel(std::int64_t n, const float* y, const float* dy, float* dx) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dx[i] = scalar::relu_grad(y[i], dy[i]);
}

__global__ void adam_kernel(std::int64_t n, float* p, const float* grad, float* ma, float* va,
                            scalar::AdamScalars s) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    scalar::adam_update(p[i], grad[i], ma[i], va[i], s);
}

}  // namespace

void relu_backward(const LaunchContext& ctx, const ops::ReluBackward& op) {
  if (op.n == 0) return;
  relu_backward_kernel<<<grid_for(ctx, op.n), kBlock, 0, ctx.stream>>>(op.n, op.y, op.dy, op.dx);
  check_launch("gdrt::relu_backward");
}

void adam_step(const LaunchContext& ctx, const ops::AdamStep& op) {
  if (op.n == 0) return;
  adam_kernel<<<grid_for(ctx, op.n), kBlock, 0, ctx.stream>>>(op.n, op.param, op.grad, op.exp_avg, op.exp_avg_sq,
                                                               scalar::adam_scalars(op.u));
  check_launch("gdrt::adam_update");
}

}  // namespace gdrt::cuda
