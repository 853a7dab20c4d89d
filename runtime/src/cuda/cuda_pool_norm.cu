// Max pooling and batch normalisation (NCHW, f32) with the cpu's formulas
// (ops/scalar_pool_norm.h): pooling's gradient is gathered per input in
// output order, so its sums are the cpu's scatter to the bit, and batch
// statistics accumulate in double, one block per channel (or per slice of
// one, for few channels).
#include "cuda/cuda_common.cuh"
#include "ops/scalar_elementwise.h"
#include "ops/scalar_pool_norm.h"

namespace gdrt::cuda {
namespace {

constexpr int kNormBlock = 512;

__global__ void max_pool_forward_kernel(PoolGeometry g, const float* x, float* y, std::int32_t* argmax) {
  const std::int64_t total = g.batch * g.channels * g.out_h * g.out_w;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += step) {
    const std::int64_t ox = o % g.out_w, oy = (o / g.out_w) % g.out_h, plane = o / (g.out_w * g.out_h);
    const scalar::PoolPick pick = scalar::max_pool_window(g, x + plane * g.in_h * g.in_w, oy, ox);
    y[o] = pick.value;
    argmax[o] = static_cast<std::int32_t>(pick.index);
  }
}

// dx[p] = the sum, in output order, of dy over the outputs whose argmax is p:
// the cpu's scatter loop, without atomics and in the same order.
__global__ void max_pool_backward_kernel(PoolGeometry g, const float* dy, const std::int32_t* argmax, float* dx) {
  const std::int64_t total = g.batch * g.channels * g.in_h * g.in_w;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += step) {
    const std::int64_t ix = p % g.in_w, iy = (p / g.in_w) % g.in_h, plane = p / (g.in_w * g.in_h);
    const std::int64_t local = iy * g.in_w + ix;
    // Outputs whose window covers (iy, ix): oy*s - pad <= iy <= oy*s - pad + k - 1.
    auto first = [](std::int64_t v, std::int64_t s) { return v <= 0 ? std::int64_t{0} : (v + s - 1) / s; };
    const std::int64_t oy0 = first(iy + g.pad_h - g.kernel_h + 1, g.stride_h);
    const std::int64_t oy1 = min(g.out_h - 1, (iy + g.pad_h) / g.stride_h);
    const std::int64_t ox0 = first(ix + g.pad_w - g.kernel_w + 1, g.stride_w);
    const std::int64_t ox1 = min(g.out_w - 1, (ix + g.pad_w) / g.stride_w);
    const std::int64_t base = plane * g.out_h * g.out_w;
    float sum = 0.0f;
    for (std::int64_t oy = oy0; oy <= oy1; ++oy)
      for (std::int64_t ox = ox0; ox <= ox1; ++ox) {
        const std::int64_t o = base + oy * g.out_w + ox;
        if (argmax[o] == local) sum += dy[o];
      }
    dx[p] = sum;
  }
}

// Sums a and b over the block; every thread gets the totals.
__device__ void block_sum2(double& a, double& b) {
  __shared__ double sa[kNormBlock / 32], sb[kNormBlock / 32];
  for (int off = 16; off > 0; off /= 2) {
    a += __shfl_down_sync(0xffffffffu, a, off);
    b += __shfl_down_sync(0xffffffffu, b, off);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if (lane == 0) {
    sa[warp] = a;
    sb[warp] = b;
  }
  __syncthreads();
  if (warp == 0) {
    a = lane < warps ? sa[lane] : 0.0;
    b = lane < warps ? sb[lane] : 0.0;
    for (int off = 16; off > 0; off /= 2) {
      a += __shfl_down_sync(0xffffffffu, a, off);
      b += __shfl_down_sync(0xffffffffu, b, off);
    }
    if (lane == 0) {
      sa[0] = a;
      sb[0] = b;
    }
  }
  __syncthreads();
  a = sa[0];
  b = sb[0];
  __syncthreads();
}

__device__ __forceinline__ std::int64_t channel_at(std::int64_t idx, std::int64_t c, std::int64_t hw,
                                                   std::int64_t ch) {
  return ((idx / hw) * c + ch) * hw + idx % hw;
}

__global__ void __launch_bounds__(kNormBlock) batch_norm_train_kernel(ops::BatchNormTrain o) {
  const std::int64_t ch = blockIdx.x, count = o.n * o.hw;
  double s = 0, ss = 0;
  for (std::int64_t idx = threadIdx.x; idx < count; idx += blockDim.x) {
    const double v = o.x[channel_at(idx, o.c, o.hw, ch)];
    s += v;
    ss += scalar::square(v);
  }
  block_sum2(s, ss);
  const scalar::BatchNormStats st = scalar::batch_norm_stats(s, ss, count, o.eps);
  if (threadIdx.x == 0)
    scalar::batch_norm_keep_stats(ch, st, count, o.momentum, o.save_mean, o.save_invstd, o.running_mean,
                                  o.running_var);
  const scalar::BatchNormAffine a = scalar::batch_norm_affine(st.mean, st.invstd, o.w, o.b, ch);
  for (std::int64_t idx = threadIdx.x; idx < count; idx += blockDim.x) {
    const std::int64_t at = channel_at(idx, o.c, o.hw, ch);
    const float v = scalar::batch_norm_apply(o.x[at], a.scale, a.shift);
    o.y[at] = o.relu ? scalar::relu(v) : v;
  }
}

__global__ void batch_norm_eval_kernel(ops::BatchNormEval o) {
  const std::int64_t total = o.n * o.c * o.hw;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const std::int64_t ch = (i / o.hw) % o.c;
    const double invstd = scalar::batch_norm_invstd(o.running_var[ch], o.eps);
    const scalar::BatchNormAffine a = scalar::batch_norm_affine(o.running_mean[ch], invstd, o.w, o.b, ch);
    const float v = scalar::batch_norm_apply(o.x[i], a.scale, a.shift);
    o.y[i] = o.relu ? scalar::relu(v) : v;
  }
}

// The upstream gradient: dy, or 0 where the fused relu's output is not positive.
__device__ __forceinline__ float upstream_grad(const ops::BatchNormBackward& o, std::int64_t at) {
  return o.relu_out ? scalar::relu_grad(o.relu_out[at], o.dy[at]) : o.dy[at];
}

__global__ void __launch_bounds__(kNormBlock) batch_norm_backward_kernel(ops::BatchNormBackward o) {
  const std::int64_t ch = blockIdx.x, count = o.n * o.hw;
  const float m = o.mean[ch], is = o.invstd[ch];
  double sum_dy = 0, sum_dy_centered = 0;
  for (std::int64_t idx = threadIdx.x; idx < count; idx += blockDim.x) {
    const std::int64_t at = channel_at(idx, o.c, o.hw, ch);
    const float g = upstream_grad(o, at);
    sum_dy += static_cast<double>(g);
    sum_dy_centered += scalar::batch_norm_centered_grad(g, o.x[at], m);
  }
  block_sum2(sum_dy, sum_dy_centered);
  const scalar::BatchNormGrads f = scalar::batch_norm_grads(sum_dy, sum_dy_centered, is, o.w, ch, o.training, count);
  if (threadIdx.x == 0) {
    if (o.dw) o.dw[ch] = f.dw;
    if (o.db) o.db[ch] = f.db;
  }
  if (!o.dx) return;
  for (std::int64_t idx = threadIdx.x; idx < count; idx += blockDim.x) {
    const std::int64_t at = channel_at(idx, o.c, o.hw, ch);
    o.dx[at] = scalar::batch_norm_grad_input(upstream_grad(o, at), o.x[at], m, is, f.k1, f.mean_dy, f.mean_dyx);
  }
}

// Few channels over many elements: per-channel blocks would leave most SMs
// idle, so each channel's elements are cut into slices whose partial sums
// (in double) are combined in slice order, then applied element-wise.
struct ChannelSlices {
  std::int64_t n, c, hw, slices;
};

__device__ __forceinline__ void slice_range(const ChannelSlices& cs, std::int64_t b, std::int64_t& ch,
                                            std::int64_t& begin, std::int64_t& end) {
  const std::int64_t count = cs.n * cs.hw, j = b % cs.slices;
  ch = b / cs.slices;
  begin = count * j / cs.slices;
  end = count * (j + 1) / cs.slices;
}

__global__ void __launch_bounds__(kNormBlock) batch_norm_partial_moments(ChannelSlices cs, const float* x,
                                                                         double* part) {
  for (std::int64_t b = blockIdx.x; b < cs.c * cs.slices; b += gridDim.x) {
    std::int64_t ch, begin, end;
    slice_range(cs, b, ch, begin, end);
    double s = 0, ss = 0;
    for (std::int64_t idx = begin + threadIdx.x; idx < end; idx += blockDim.x) {
      const double v = x[channel_at(idx, cs.c, cs.hw, ch)];
      s += v;
      ss += scalar::square(v);
    }
    block_sum2(s, ss);
    if (threadIdx.x == 0) {
      part[2 * b] = s;
      part[2 * b + 1] = ss;
    }
  }
}

// Per channel: the statistics from the partial moments, the running-stat
// update, and mean/invstd in double for the element-wise pass (the cpu
// derives scale and shift from the unrounded values).
__global__ void batch_norm_finish_moments(ChannelSlices cs, const double* part, ops::BatchNormTrain o,
                                          double* stats) {
  const std::int64_t ch = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= cs.c) return;
  double s = 0, ss = 0;
  for (std::int64_t j = 0; j < cs.slices; ++j) {
    s += part[2 * (ch * cs.slices + j)];
    ss += part[2 * (ch * cs.slices + j) + 1];
  }
  const std::int64_t count = cs.n * cs.hw;
  const scalar::BatchNormStats st = scalar::batch_norm_stats(s, ss, count, o.eps);
  scalar::batch_norm_keep_stats(ch, st, count, o.momentum, o.save_mean, o.save_invstd, o.running_mean, o.running_var);
  stats[2 * ch] = st.mean;
  stats[2 * ch + 1] = st.invstd;
}

__global__ void batch_norm_apply(ops::BatchNormTrain o, const double* stats) {
  const std::int64_t total = o.n * o.c * o.hw;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const std::int64_t ch = (i / o.hw) % o.c;
    const scalar::BatchNormAffine a = scalar::batch_norm_affine(stats[2 * ch], stats[2 * ch + 1], o.w, o.b, ch);
    const float v = scalar::batch_norm_apply(o.x[i], a.scale, a.shift);
    o.y[i] = o.relu ? scalar::relu(v) : v;
  }
}

__global__ void __launch_bounds__(kNormBlock) batch_norm_partial_grads(ChannelSlices cs, ops::BatchNormBackward o,
                                                                       double* part) {
  for (std::int64_t b = blockIdx.x; b < cs.c * cs.slices; b += gridDim.x) {
    std::int64_t ch, begin, end;
    slice_range(cs, b, ch, begin, end);
    const float m = o.mean[ch];
    double sum_dy = 0, sum_dy_centered = 0;
    for (std::int64_t idx = begin + threadIdx.x; idx < end; idx += blockDim.x) {
      const std::int64_t at = channel_at(idx, cs.c, cs.hw, ch);
      const float g = upstream_grad(o, at);
      sum_dy += static_cast<double>(g);
      sum_dy_centered += scalar::batch_norm_centered_grad(g, o.x[at], m);
    }
    block_sum2(sum_dy, sum_dy_centered);
    if (threadIdx.x == 0) {
      part[2 * b] = sum_dy;
      part[2 * b + 1] = sum_dy_centered;
    }
  }
}

// Per channel: dw, db and the three factors of dx (k1, mean_dy, mean_dyx).
__global__ void batch_norm_finish_grads(ChannelSlices cs, const double* part, ops::BatchNormBackward o,
                                        float* factors) {
  const std::int64_t ch = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= cs.c) return;
  double sum_dy = 0, sum_dy_centered = 0;
  for (std::int64_t j = 0; j < cs.slices; ++j) {
    sum_dy += part[2 * (ch * cs.slices + j)];
    sum_dy_centered += part[2 * (ch * cs.slices + j) + 1];
  }
  const scalar::BatchNormGrads f =
      scalar::batch_norm_grads(sum_dy, sum_dy_centered, o.invstd[ch], o.w, ch, o.training, cs.n * cs.hw);
  if (o.dw) o.dw[ch] = f.dw;
  if (o.db) o.db[ch] = f.db;
  factors[3 * ch] = f.k1;
  factors[3 * ch + 1] = f.mean_dy;
  factors[3 * ch + 2] = f.mean_dyx;
}

__global__ void batch_norm_grad_input(ops::BatchNormBackward o, const float* factors) {
  const std::int64_t total = o.n * o.c * o.hw;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const std::int64_t ch = (i / o.hw) % o.c;
    const float m = o.mean[ch], is = o.invstd[ch];
    const float k1 = factors[3 * ch], mean_dy = factors[3 * ch + 1], mean_dyx = factors[3 * ch + 2];
    o.dx[i] = scalar::batch_norm_grad_input(upstream_grad(o, i), o.x[i], m, is, k1, mean_dy, mean_dyx);
  }
}

// Slices per channel worth splitting into, or 1 for one block per channel.
std::int64_t channel_slices(const LaunchContext& ctx, std::int64_t c, std::int64_t count) {
  const std::int64_t sms = std::max(ctx.sm_count, 1);
  if (!ctx.scratch || c >= 2 * sms) return 1;
  return std::max<std::int64_t>(1, std::min(count / 32768, (4 * sms + c - 1) / c));
}

}  // namespace

void max_pool2d_forward(const LaunchContext& ctx, const ops::MaxPool2dForward& op) {
  const std::int64_t total = ops::pool_outputs(op.g);
  if (total == 0) return;
  max_pool_forward_kernel<<<grid_for(ctx, total), kBlock, 0, ctx.stream>>>(op.g, op.x, op.y, op.argmax);
  check_launch("gdrt::max_pool2d_forward");
}

void max_pool2d_backward(const LaunchContext& ctx, const ops::MaxPool2dBackward& op) {
  const std::int64_t total = ops::pool_inputs(op.g);
  if (total == 0) return;
  if (op.g.stride_h <= 0 || op.g.stride_w <= 0) throw Error("cuda max_pool2d_backward: stride must be positive");
  max_pool_backward_kernel<<<grid_for(ctx, total), kBlock, 0, ctx.stream>>>(op.g, op.dy, op.argmax, op.dx);
  check_launch("gdrt::max_pool2d_backward");
}

void batch_norm_train(const LaunchContext& ctx, const ops::BatchNormTrain& op) {
  if (op.c == 0) return;
  if (op.c > INT32_MAX) throw Error("cuda batch_norm: too many channels for one block each");
  const ChannelSlices cs{op.n, op.c, op.hw, channel_slices(ctx, op.c, op.n * op.hw)};
  if (cs.slices == 1) {
    batch_norm_train_kernel<<<static_cast<unsigned>(op.c), kNormBlock, 0, ctx.stream>>>(op);
    check_launch("gdrt::batch_norm_train");
    return;
  }
  auto* part = static_cast<double*>(ctx.scratch->get(static_cast<std::size_t>(2 * op.c * cs.slices) * sizeof(double)));
  auto* stats = static_cast<double*>(ctx.scratch->get(static_cast<std::size_t>(2 * op.c) * sizeof(double)));
  batch_norm_partial_moments<<<static_cast<unsigned>(op.c * cs.slices), kNormBlock, 0, ctx.stream>>>(cs, op.x, part);
  check_launch("gdrt::batch_norm_train");
  batch_norm_finish_moments<<<static_cast<unsigned>((op.c + kBlock - 1) / kBlock), kBlock, 0, ctx.stream>>>(
      cs, part, op, stats);
  check_launch("gdrt::batch_norm_train");
  batch_norm_apply<<<grid_for(ctx, op.n * op.c * op.hw), kBlock, 0, ctx.stream>>>(op, stats);
  check_launch("gdrt::batch_norm_train");
}

void batch_norm_eval(const LaunchContext& ctx, const ops::BatchNormEval& op) {
  const std::int64_t total = op.n * op.c * op.hw;
  if (total == 0) return;
  batch_norm_eval_kernel<<<grid_for(ctx, total), kBlock, 0, ctx.stream>>>(op);
  check_launch("gdrt::batch_norm_eval");
}

void batch_norm_backward(const LaunchContext& ctx, const ops::BatchNormBackward& op) {
  if (op.c == 0) return;
  if (op.c > INT32_MAX) throw Error("cuda batch_norm: too many channels for one block each");
  const ChannelSlices cs{op.n, op.c, op.hw, channel_slices(ctx, op.c, op.n * op.hw)};
  if (cs.slices == 1) {
    batch_norm_backward_kernel<<<static_cast<unsigned>(op.c), kNormBlock, 0, ctx.stream>>>(op);
    check_launch("gdrt::batch_norm_backward");
    return;
  }
  auto* part = static_cast<double*>(ctx.scratch->get(static_cast<std::size_t>(2 * op.c * cs.slices) * sizeof(double)));
  auto* factors = static_cast<float*>(ctx.scratch->get(static_cast<std::size_t>(3 * op.c) * sizeof(float)));
  batch_norm_partial_grads<<<static_cast<unsigned>(op.c * cs.slices), kNormBlock, 0, ctx.stream>>>(cs, op, part);
  check_launch("gdrt::batch_norm_backward");
  batch_norm_finish_grads<<<static_cast<unsigned>((op.c + kBlock - 1) / kBlock), kBlock, 0, ctx.stream>>>(
      cs, part, op, factors);
  check_launch("gdrt::batch_norm_backward");
  if (!op.dx) return;
  batch_norm_grad_input<<<grid_for(ctx, op.n * op.c * op.hw), kBlock, 0, ctx.stream>>>(op, factors);
  check_launch("gdrt::batch_norm_backward");
}

}  // namespace gdrt::cuda
