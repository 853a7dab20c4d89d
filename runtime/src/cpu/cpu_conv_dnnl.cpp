// Convolutions through oneDNN. Tensors stay NCHW at the gdrt level; oneDNN
// picks its preferred (blocked) layouts and we reorder around each call.
// Primitives and scratch buffers are cached per geometry and per thread.
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cpu/conv_impl.h"

namespace gdrt::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>;

Key key_of(const ConvGeometry& g, bool bias) {
  return {g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel_h, g.kernel_w,
          g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h * 1000 + g.dilation_w, bias};
}

// A buffer in oneDNN's chosen layout, or the user's NCHW memory when the
// layouts agree (then no reorder happens). The reorder primitives are made
// once per plan, not per call.
struct Staged {
  memory::desc want;
  memory scratch;  // allocated once when want differs from the plain layout
  bool needs_reorder = false;
  dnnl::reorder to_want, to_plain;
};

Staged stage(const memory::desc& want, const memory::desc& plain) {
  Staged s{want, {}, want != plain, {}, {}};
  if (s.needs_reorder) s.scratch = memory(want, engine());
  return s;
}

struct ConvPlan {
  memory::desc src_plain, wei_plain, dst_plain, bias_plain;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  Staged f_src, f_wei, f_dst;
  bool have_bwd_data = false, have_bwd_weights = false;
  dnnl::convolution_backward_data bwd_data;
  Staged d_diff_src, d_wei, d_diff_dst;
  dnnl::convolution_backward_weights bwd_weights;
  Staged w_src, w_diff_wei, w_diff_dst;
  memory::dims strides, dilation, pad_l, pad_r;
  bool bias;
};

bool supported(const ConvGeometry& g) {
  const std::int64_t pr_h = (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1 - g.in_h - g.pad_h;
  const std::int64_t pr_w = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1 - g.in_w - g.pad_w;
  return pr_h >= 0 && pr_w >= 0;
}

ConvPlan& plan(const ConvGeometry& g, bool bias) {
  thread_local std::map<Key, std::unique_ptr<ConvPlan>> cache;
  auto& slot = cache[key_of(g, bias)];
  if (slot) return *slot;
  auto p = std::make_unique<ConvPlan>();
  p->bias = bias;
  const memory::dims src{g.batch, g.in_channels, g.in_h, g.in_w}, wei{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
  const memory::dims dst{g.batch, g.out_channels, g.out_h, g.out_w}, b{g.out_channels};
  p->strides = {g.stride_h, g.stride_w};
  p->dilation = {g.dilation_h - 1, g.dilation_w - 1};
  p->pad_l = {g.pad_h, g.pad_w};
  p->pad_r = {(g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1 - g.in_h - g.pad_h,
              (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1 - g.in_w - g.pad_w};
  p->src_plain = memory::desc(src, dt::f32, tag::nchw);
  p->wei_plain = memory::desc(wei, dt::f32, tag::oihw);
  p->dst_plain = memory::desc(dst, dt::f32, tag::nchw);
  p->bias_plain = memory::desc(b, dt::f32, tag::x);
  const memory::desc src_any(src, dt::f32, tag::any), wei_any(wei, dt::f32, tag::any), dst_any(dst, dt::f32, tag::any);
  auto desc = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                     src_any, wei_any, p->bias_plain, dst_any, p->strides, p->dilation,
                                                     p->pad_l, p->pad_r)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                     src_any, wei_any, dst_any, p->strides, p->dilation, p->pad_l, p->pad_r);
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(desc, engine());
  p->fwd = dnnl::convolution_forward(p->fwd_pd);
  p->f_src = stage(p->fwd_pd.src_desc(), p->src_plain);
  p->f_wei = stage(p->fwd_pd.weights_desc(), p->wei_plain);
  p->f_dst = stage(p->fwd_pd.dst_desc(), p->dst_plain);
  slot = std::move(p);
  return *slot;
}

void ensure_backward(ConvPlan& p, const ConvGeometry& g) {
  const memory::dims src{g.batch, g.in_channels, g.in_h, g.in_w}, wei{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
  const memory::dims dst{g.batch, g.out_channels, g.out_h, g.out_w};
  const memory::desc src_any(src, dt::f32, tag::any), wei_any(wei, dt::f32, tag::any), dst_any(dst, dt::f32, tag::any);
  if (!p.have_bwd_data) {
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, src_any, wei_any, dst_any, p.strides,
                                            p.dilation, p.pad_l, p.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(d, engine(), p.fwd_pd);
    p.bwd_data = dnnl::convolution_backward_data(pd);
    p.d_diff_src = stage(pd.diff_src_desc(), p.src_plain);
    p.d_wei = stage(pd.weights_desc(), p.wei_plain);
    p.d_diff_dst = stage(pd.diff_dst_desc(), p.dst_plain);
    p.have_bwd_data = true;
  }
  if (!p.have_bwd_weights) {
    auto d = p.bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_any, wei_any,
                                                               p.bias_plain, dst_any, p.strides, p.dilation, p.pad_l,
                                                               p.pad_r)
                    : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_any, wei_any,
                                                               dst_any, p.strides, p.dilation, p.pad_l, p.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(d, engine(), p.fwd_pd);
    p.bwd_weights = dnnl::convolution_backward_weights(pd);
    p.w_src = stage(pd.src_desc(), p.src_plain);
    p.w_diff_wei = stage(pd.diff_weights_desc(), p.wei_plain);
    p.w_diff_dst = stage(pd.diff_dst_desc(), p.dst_plain);
    p.have_bwd_weights = true;
  }
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// Input: the user's plain buffer, reordered into the primitive's layout if needed.
memory input(Staged& s, const memory::desc& plain, const float* data) {
  memory user(plain, engine(), const_cast<float*>(data));
  if (!s.needs_reorder) return user;
  if (!s.to_want) s.to_want = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), s.want));
  s.to_want.execute(stream(), user, s.scratch);
  return s.scratch;
}

memory output(Staged& s, const memory::desc& plain, float* data) {
  return s.needs_reorder ? s.scratch : memory(plain, engine(), data);
}

void finish_output(Staged& s, const memory::desc& plain, float* data) {
  if (!s.needs_reorder) return;
  memory user(plain, engine(), data);
  if (!s.to_plain) s.to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), s.want, engine(), plain));
  s.to_plain.execute(stream(), s.scratch, user);
}


// The batch is cut into one slice per image when the pool has several
// threads (more slices than threads, so a thread that loses its core does
// not hold up a fixed half of the work), else kept whole. Every slice has
// the same geometry, hence the same plan and layouts in every thread.
struct Split {
  std::int64_t parts;
  ConvGeometry part;
};

Split split_of(const ConvGeometry& g) {
  Split s{pool_threads() > 1 ? g.batch : 1, g};
  s.part.batch = g.batch / s.parts;
  return s;
}

// oneDNN (built on OpenMP here) runs single-threaded inside each of gdrt's
// pool threads, each on its own slice of the batch: OpenMP never starts a
// team, so no worker spins between calls, and the pool's threads sleep.
template <class Body>
void for_each_slice(const Split& s, Body&& body) {
  parallel_for(s.parts, s.parts > 1, [&](std::int64_t p0, std::int64_t p1) {
    omp_set_num_threads(1);
    for (std::int64_t p = p0; p < p1; ++p) body(p);
  });
}

// Grow-only per-thread float buffers (weights reordered once per call and
// shared by the slices; per-slice weight gradients), 64-byte aligned as
// tensor storage is, so the kernels' vector loads never split cache lines.
float* thread_buffer(int which, std::size_t floats) {
  constexpr std::size_t kAlignFloats = 16;
  thread_local std::vector<float> buffers[2];
  auto& b = buffers[which];
  if (b.size() < floats + kAlignFloats) b.resize(floats + kAlignFloats);
  const auto addr = reinterpret_cast<std::uintptr_t>(b.data());
  return b.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

// The weights in the layout `s` wants, reordered once by the calling thread
// into its own buffer; slices whose plan wants the same layout read it.
memory shared_weights(const Staged& s, const memory::desc& plain, const float* w) {
  memory user(plain, engine(), const_cast<float*>(w));
  if (!s.needs_reorder) return user;
  memory shared(s.want, engine(), thread_buffer(0, s.want.get_size() / sizeof(float)));
  dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), s.want)).execute(stream(), user, shared);
  stream().wait();
  return shared;
}

memory weights_for(Staged& s, const memory::desc& plain, const float* w, const memory& shared) {
  return s.want == shared.get_desc() ? shared : input(s, plain, w);
}

}  // namespace

ConvImpl conv_impl() {
  static const ConvImpl impl = [] {
    const char* env = std::getenv("GDRT_CPU_CONV");
    return env && std::string(env) == "im2col" ? ConvImpl::im2col : ConvImpl::onednn;
  }();
  return impl;
}

bool dnnl_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  if (!supported(g)) return false;
  const Split sp = split_of(g);
  const std::int64_t x_step = sp.part.batch * g.in_channels * g.in_h * g.in_w;
  const std::int64_t y_step = sp.part.batch * g.out_channels * g.out_h * g.out_w;
  ConvPlan& p0 = plan(sp.part, bias != nullptr);
  const memory wei = shared_weights(p0.f_wei, p0.wei_plain, w);
  for_each_slice(sp, [&](std::int64_t i) {
    ConvPlan& p = plan(sp.part, bias != nullptr);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, input(p.f_src, p.src_plain, x + i * x_step)},
                                         {DNNL_ARG_WEIGHTS, weights_for(p.f_wei, p.wei_plain, w, wei)},
                                         {DNNL_ARG_DST, output(p.f_dst, p.dst_plain, y + i * y_step)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias_plain, engine(), const_cast<float*>(bias)));
    p.fwd.execute(stream(), args);
    finish_output(p.f_dst, p.dst_plain, y + i * y_step);
    stream().wait();
  });
  return true;
}

// Both gradients of one convolution; any of x/dx, w/dw, db may be null when
// not wanted. The output gradient dy is reordered once per slice and read by
// both primitives when they want the same layout (they do on AVX-512).
bool dnnl_conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx, float* dw,
                          float* db) {
  if (!supported(g)) return false;
  const Split sp = split_of(g);
  const std::int64_t x_step = sp.part.batch * g.in_channels * g.in_h * g.in_w;
  const std::int64_t y_step = sp.part.batch * g.out_channels * g.out_h * g.out_w;
  ConvPlan& p0 = plan(sp.part, db != nullptr);
  ensure_backward(p0, sp.part);
  const memory wei = dx ? shared_weights(p0.d_wei, p0.wei_plain, w) : memory();
  // Each slice's weight (and bias) gradient lands in its own buffer, in the
  // primitive's layout; they are summed, then reordered to OIHW once.
  const memory::desc dw_desc = p0.w_diff_wei.want;
  const std::size_t dw_n = dw_desc.get_size() / sizeof(float), db_n = db ? static_cast<std::size_t>(g.out_channels) : 0;
  float* partial = dw ? thread_buffer(1, static_cast<std::size_t>(sp.parts) * (dw_n + db_n)) : nullptr;
  for_each_slice(sp, [&](std::int64_t i) {
    ConvPlan& p = plan(sp.part, db != nullptr);
    ensure_backward(p, sp.part);
    const memory grad_out = input(p.d_diff_dst, p.dst_plain, dy + i * y_step);
    if (dx) {
      p.bwd_data.execute(stream(), {{DNNL_ARG_DIFF_DST, grad_out},
                                    {DNNL_ARG_WEIGHTS, weights_for(p.d_wei, p.wei_plain, w, wei)},
                                    {DNNL_ARG_DIFF_SRC, output(p.d_diff_src, p.src_plain, dx + i * x_step)}});
      finish_output(p.d_diff_src, p.src_plain, dx + i * x_step);
    }
    if (dw) {
      float* mine = partial + static_cast<std::size_t>(i) * (dw_n + db_n);
      const bool same = p.w_diff_dst.want == p.d_diff_dst.want;
      // A slice whose plan chose another layout (not expected: same geometry,
      // same library) computes in its own and converts into the shared one.
      const bool own_layout = p.w_diff_wei.want != dw_desc;
      memory sum_slot(dw_desc, engine(), mine);
      memory target = own_layout ? memory(p.w_diff_wei.want, engine()) : sum_slot;
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, input(p.w_src, p.src_plain, x + i * x_step)},
          {DNNL_ARG_DIFF_DST, same ? grad_out : input(p.w_diff_dst, p.dst_plain, dy + i * y_step)},
          {DNNL_ARG_DIFF_WEIGHTS, target}};
      if (db) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p.bias_plain, engine(), mine + dw_n));
      p.bwd_weights.execute(stream(), args);
      if (own_layout) dnnl::reorder(target, sum_slot).execute(stream(), target, sum_slot);
    }
    stream().wait();
  });
  if (!dw) return true;
  const std::size_t stride = dw_n + db_n;
  parallel_for(static_cast<std::int64_t>(stride), stride > (1 << 15), [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t part = 1; part < sp.parts; ++part) {
      const float* src = partial + static_cast<std::size_t>(part) * stride;
      for (std::int64_t j = j0; j < j1; ++j) partial[j] += src[j];
    }
  });
  memory summed(dw_desc, engine(), partial), user(p0.wei_plain, engine(), dw);
  if (p0.w_diff_wei.needs_reorder)
    dnnl::reorder(dnnl::reorder::primitive_desc(engine(), dw_desc, engine(), p0.wei_plain)).execute(stream(), summed, user);
  else
    std::memcpy(dw, partial, dw_n * sizeof(float));
  stream().wait();
  if (db) std::memcpy(db, partial + dw_n, db_n * sizeof(float));
  return true;
}

bool dnnl_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  return dnnl_conv2d_backward(g, nullptr, dy, w, dx, nullptr, nullptr);
}

bool dnnl_conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) {
  return dnnl_conv2d_backward(g, x, dy, nullptr, nullptr, dw, db);
}

void CpuKernels::conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  if (conv_impl() == ConvImpl::onednn && dnnl_conv2d_forward(g, x, w, bias, y)) return;
  im2col_conv2d_forward(g, x, w, bias, y);
}

void CpuKernels::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  if (conv_impl() == ConvImpl::onednn && dnnl_conv2d_backward_data(g, dy, w, dx)) return;
  im2col_conv2d_backward_data(g, dy, w, dx);
}

void CpuKernels::conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) {
  if (conv_impl() == ConvImpl::onednn && dnnl_conv2d_backward_weight(g, x, dy, dw, db)) return;
  im2col_conv2d_backward_weight(g, x, dy, dw, db);
}

void CpuKernels::conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx,
                                 float* dw, float* db) {
  if (conv_impl() == ConvImpl::onednn && dnnl_conv2d_backward(g, x, dy, w, dx, dw, db)) return;
  if (dx) im2col_conv2d_backward_data(g, dy, w, dx);
  if (dw) im2col_conv2d_backward_weight(g, x, dy, dw, db);
}

void adopt_kernel_thread() { omp_set_num_threads(1); }

}  // namespace gdrt::cpu
