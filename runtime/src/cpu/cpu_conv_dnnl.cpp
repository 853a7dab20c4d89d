// Convolutions through oneDNN. Tensors stay NCHW at the gdrt level; oneDNN
// picks its preferred (blocked) layouts and we reorder around each call.
// Primitives and scratch buffers are cached per geometry and per thread.
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

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
// layouts agree (then no reorder happens).
struct Staged {
  memory::desc want;
  memory scratch;  // allocated once when want differs from the plain layout
  bool needs_reorder = false;
};

Staged stage(const memory::desc& want, const memory::desc& plain) {
  Staged s{want, {}, want != plain};
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
  dnnl::reorder(user, s.scratch).execute(stream(), user, s.scratch);
  return s.scratch;
}

memory output(Staged& s, const memory::desc& plain, float* data) {
  return s.needs_reorder ? s.scratch : memory(plain, engine(), data);
}

void finish_output(Staged& s, const memory::desc& plain, float* data) {
  if (!s.needs_reorder) return;
  memory user(plain, engine(), data);
  dnnl::reorder(s.scratch, user).execute(stream(), s.scratch, user);
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
  ConvPlan& p = plan(g, bias != nullptr);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, input(p.f_src, p.src_plain, x)},
                                       {DNNL_ARG_WEIGHTS, input(p.f_wei, p.wei_plain, w)},
                                       {DNNL_ARG_DST, output(p.f_dst, p.dst_plain, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias_plain, engine(), const_cast<float*>(bias)));
  p.fwd.execute(stream(), args);
  finish_output(p.f_dst, p.dst_plain, y);
  stream().wait();
  return true;
}

bool dnnl_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  if (!supported(g)) return false;
  ConvPlan& p = plan(g, false);
  ensure_backward(p, g);
  p.bwd_data.execute(stream(), {{DNNL_ARG_DIFF_DST, input(p.d_diff_dst, p.dst_plain, dy)},
                                {DNNL_ARG_WEIGHTS, input(p.d_wei, p.wei_plain, w)},
                                {DNNL_ARG_DIFF_SRC, output(p.d_diff_src, p.src_plain, dx)}});
  finish_output(p.d_diff_src, p.src_plain, dx);
  stream().wait();
  return true;
}

bool dnnl_conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) {
  if (!supported(g)) return false;
  ConvPlan& p = plan(g, db != nullptr);
  ensure_backward(p, g);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, input(p.w_src, p.src_plain, x)},
                                       {DNNL_ARG_DIFF_DST, input(p.w_diff_dst, p.dst_plain, dy)},
                                       {DNNL_ARG_DIFF_WEIGHTS, output(p.w_diff_wei, p.wei_plain, dw)}};
  if (db) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p.bias_plain, engine(), db));
  p.bwd_weights.execute(stream(), args);
  finish_output(p.w_diff_wei, p.wei_plain, dw);
  stream().wait();
  return true;
}

namespace {

// oneDNN (built on OpenMP here) runs single-threaded inside each of gdrt's
// pool threads, each on its own slice of the batch: OpenMP never starts a
// team, so no worker spins between calls, and the pool's threads sleep.
template <class Body>
void split_batch(const ConvGeometry& g, Body&& body) {
  const std::int64_t parts = std::min<std::int64_t>(pool_threads(), g.batch);
  parallel_for(parts, parts > 1, [&](std::int64_t p0, std::int64_t p1) {
    omp_set_num_threads(1);
    for (std::int64_t p = p0; p < p1; ++p) {
      ConvGeometry part = g;
      const std::int64_t n0 = g.batch * p / parts, n1 = g.batch * (p + 1) / parts;
      part.batch = n1 - n0;
      body(part, n0, p);
    }
  });
}

}  // namespace

void CpuKernels::conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  if (conv_impl() == ConvImpl::onednn && supported(g)) {
    split_batch(g, [&](const ConvGeometry& part, std::int64_t n0, std::int64_t) {
      dnnl_conv2d_forward(part, x + n0 * g.in_channels * g.in_h * g.in_w, w, bias,
                          y + n0 * g.out_channels * g.out_h * g.out_w);
    });
    return;
  }
  im2col_conv2d_forward(g, x, w, bias, y);
}

void CpuKernels::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  if (conv_impl() == ConvImpl::onednn && supported(g)) {
    split_batch(g, [&](const ConvGeometry& part, std::int64_t n0, std::int64_t) {
      dnnl_conv2d_backward_data(part, dy + n0 * g.out_channels * g.out_h * g.out_w, w,
                                dx + n0 * g.in_channels * g.in_h * g.in_w);
    });
    return;
  }
  im2col_conv2d_backward_data(g, dy, w, dx);
}

void CpuKernels::conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) {
  if (conv_impl() == ConvImpl::onednn && supported(g)) {
    // Each slice of the batch gets its own weight-gradient buffer; they are summed after.
    const std::int64_t parts = std::min<std::int64_t>(pool_threads(), g.batch);
    const std::int64_t wn = g.out_channels * g.in_channels * g.kernel_h * g.kernel_w, bn = db ? g.out_channels : 0;
    std::vector<float> extra(static_cast<std::size_t>((parts - 1) * (wn + bn)));
    split_batch(g, [&](const ConvGeometry& part, std::int64_t n0, std::int64_t p) {
      float* pdw = p == 0 ? dw : extra.data() + (p - 1) * (wn + bn);
      float* pdb = db ? (p == 0 ? db : extra.data() + (p - 1) * (wn + bn) + wn) : nullptr;
      dnnl_conv2d_backward_weight(part, x + n0 * g.in_channels * g.in_h * g.in_w,
                                  dy + n0 * g.out_channels * g.out_h * g.out_w, pdw, pdb);
    });
    for (std::int64_t p = 1; p < parts; ++p) {
      const float* src = extra.data() + (p - 1) * (wn + bn);
      for (std::int64_t i = 0; i < wn; ++i) dw[i] += src[i];
      for (std::int64_t i = 0; i < bn; ++i) db[i] += src[wn + i];
    }
    return;
  }
  im2col_conv2d_backward_weight(g, x, dy, dw, db);
}

}  // namespace gdrt::cpu
