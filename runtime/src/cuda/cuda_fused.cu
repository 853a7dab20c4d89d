// Fused kernels: relu's gradient and the Adam update in one pass each, in
// the cpu's float operation order (cpu_fused.cpp).
#include "cuda/cuda_common.cuh"

namespace gdrt::cuda {
namespace {

__global__ void relu_backward_kernel(std::int64_t n, const float* y, const float* dy, float* dx) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

struct AdamScalars {
  float b1, one_b1, b2, one_b2, eps, step, bc2;
};

__global__ void adam_kernel(std::int64_t n, float* p, const float* grad, float* ma, float* va, AdamScalars s) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = grad[i];
    // Separate roundings, as the cpu loop (compiled without contraction).
    const float m = __fadd_rn(__fmul_rn(ma[i], s.b1), __fmul_rn(g, s.one_b1));
    const float v = __fadd_rn(__fmul_rn(va[i], s.b2), __fmul_rn(__fmul_rn(s.one_b2, g), g));
    ma[i] = m;
    va[i] = v;
    p[i] = __fsub_rn(p[i], __fmul_rn(s.step, __fdiv_rn(m, __fadd_rn(__fdiv_rn(sqrtf(v), s.bc2), s.eps))));
  }
}

}  // namespace

void relu_backward(const LaunchContext& ctx, const ops::ReluBackward& op) {
  if (op.n == 0) return;
  relu_backward_kernel<<<grid_for(ctx, op.n), kBlock, 0, ctx.stream>>>(op.n, op.y, op.dy, op.dx);
  check_launch("gdrt::relu_backward");
}

void adam_step(const LaunchContext& ctx, const ops::AdamStep& op) {
  if (op.n == 0) return;
  const AdamUpdate& u = op.u;
  const AdamScalars s{static_cast<float>(u.beta1),    static_cast<float>(1.0 - u.beta1),
                      static_cast<float>(u.beta2),    static_cast<float>(1.0 - u.beta2),
                      static_cast<float>(u.eps),      static_cast<float>(u.step_size),
                      static_cast<float>(u.bias_correction2_sqrt)};
  adam_kernel<<<grid_for(ctx, op.n), kBlock, 0, ctx.stream>>>(op.n, op.param, op.grad, op.exp_avg, op.exp_avg_sq, s);
  check_launch("gdrt::adam_update");
}

}  // namespace gdrt::cuda
