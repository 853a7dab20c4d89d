// conv2d and conv_transpose2d (NCHW, f32) with their gradients. The
// transposed convolution is the adjoint of conv2d, so both reuse the same
// three kernels (forward, backward-data, backward-weight).
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {
namespace {

void check_conv_args(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias, Conv2dOptions o) {
  check_same_device(op, x, w);
  check_same_device(op, x, bias);
  if (x.dim() != 4) throw Error(std::string(op) + ": input must be 4-D [N, C, H, W], got " + shape_str(x.shape()));
  if (w.dim() != 4) throw Error(std::string(op) + ": weight must be 4-D, got " + shape_str(w.shape()));
  check_binary_dtypes(op, x, w);
  if (x.dtype() != DType::f32)
    throw Error(std::string(op) + " computes in float32, got " + x.describe() + "; convert with .to(DType::f32)");
  if (bias.defined()) check_binary_dtypes(op, x, bias);
  if (o.stride < 1 || o.dilation < 1 || o.padding < 0)
    throw Error(std::string(op) + ": stride and dilation must be >= 1 and padding >= 0 (got stride " +
                std::to_string(o.stride) + ", padding " + std::to_string(o.padding) + ", dilation " +
                std::to_string(o.dilation) + ")");
}

ConvGeometry geometry(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t o, std::int64_t kh,
                      std::int64_t kw, Conv2dOptions opt) {
  ConvGeometry g{n, c, h, w, o, kh, kw, opt.stride, opt.stride, opt.padding, opt.padding, opt.dilation, opt.dilation, 0, 0};
  g.out_h = (h + 2 * opt.padding - opt.dilation * (kh - 1) - 1) / opt.stride + 1;
  g.out_w = (w + 2 * opt.padding - opt.dilation * (kw - 1) - 1) / opt.stride + 1;
  return g;
}

const float* fptr(const Tensor& t) { return t.defined() ? static_cast<const float*>(t.data_ptr()) : nullptr; }
float* fptr_mut(const Tensor& t) { return t.defined() ? static_cast<float*>(t.data_ptr()) : nullptr; }

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in, Conv2dOptions opt) {
  check_conv_args("conv2d", x_in, w_in, bias_in, opt);
  if (w_in.size(1) != x_in.size(1))
    throw Error("conv2d: weight " + shape_str(w_in.shape()) + " expects " + std::to_string(w_in.size(1)) +
                " input channels but the input " + shape_str(x_in.shape()) + " has " + std::to_string(x_in.size(1)));
  if (bias_in.defined() && (bias_in.dim() != 1 || bias_in.size(0) != w_in.size(0)))
    throw Error("conv2d: bias shape " + shape_str(bias_in.shape()) + " does not match " +
                std::to_string(w_in.size(0)) + " output channels");
  ConvGeometry g = geometry(x_in.size(0), x_in.size(1), x_in.size(2), x_in.size(3), w_in.size(0), w_in.size(2),
                            w_in.size(3), opt);
  if (g.out_h <= 0 || g.out_w <= 0)
    throw Error("conv2d: input " + shape_str(x_in.shape()) + " is smaller than the dilated kernel " +
                shape_str(w_in.shape()) + " with padding " + std::to_string(opt.padding));
  Tensor x = x_in.contiguous(), w = w_in.contiguous(), bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  Tensor y = make_tensor({g.batch, g.out_channels, g.out_h, g.out_w}, DType::f32, x.device());
  launch(x, ops::Conv2dForward{g, fptr(x), fptr(w), fptr(bias), fptr_mut(y)});
  const bool gx = x_in.requires_grad(), gw = w_in.requires_grad(), gb = bias_in.defined() && bias_in.requires_grad();
  attach_grad_fn(y, "conv2d", {&x_in, &w_in, &bias_in},
                 [x = x.detach(), w = w.detach(), g, gx, gw, gb](const Tensor& dy_in) {
                   Tensor dy = dy_in.contiguous();
                   Tensor dx, dw, db;
                   if (gx) dx = make_tensor(x.shape(), DType::f32, x.device());
                   if (gw || gb) dw = make_tensor(w.shape(), DType::f32, x.device());
                   if (gb) db = make_tensor({g.out_channels}, DType::f32, x.device());
                   launch(x, ops::Conv2dBackward{g, fptr(x), fptr(dy), fptr(w), fptr_mut(dx), fptr_mut(dw),
                                                 fptr_mut(db)});
                   return std::vector<Tensor>{dx, gw ? dw : Tensor(), db};
                 });
  return y;
}

Tensor conv_transpose2d(const Tensor& x_in, const Tensor& w_in, const Tensor& bias, Conv2dOptions opt,
                        std::int64_t output_padding) {
  check_conv_args("conv_transpose2d", x_in, w_in, bias, opt);
  if (w_in.size(0) != x_in.size(1))
    throw Error("conv_transpose2d: weight " + shape_str(w_in.shape()) + " ([in, out, kh, kw]) expects " +
                std::to_string(w_in.size(0)) + " input channels but the input " + shape_str(x_in.shape()) + " has " +
                std::to_string(x_in.size(1)));
  if (output_padding < 0 || (output_padding >= opt.stride && output_padding >= opt.dilation))
    throw Error("conv_transpose2d: output_padding must be smaller than stride or dilation, got " +
                std::to_string(output_padding));
  const std::int64_t n = x_in.size(0), cin = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  const std::int64_t cout = w_in.size(1), kh = w_in.size(2), kw = w_in.size(3);
  const std::int64_t oh = (h - 1) * opt.stride - 2 * opt.padding + opt.dilation * (kh - 1) + output_padding + 1;
  const std::int64_t ow = (w - 1) * opt.stride - 2 * opt.padding + opt.dilation * (kw - 1) + output_padding + 1;
  if (oh <= 0 || ow <= 0)
    throw Error("conv_transpose2d: output size would be " + shape_str(Shape{n, cout, oh, ow}));
  // The adjoint conv maps [n, cout, oh, ow] -> [n, cin, h, w] with weight [cin, cout, kh, kw].
  ConvGeometry g{n, cout, oh, ow, cin, kh, kw, opt.stride, opt.stride, opt.padding, opt.padding,
                 opt.dilation, opt.dilation, h, w};
  Tensor x = x_in.contiguous(), wt = w_in.contiguous();
  Tensor y = make_tensor({n, cout, oh, ow}, DType::f32, x.device());
  launch(x, ops::Conv2dBackwardData{g, fptr(x), fptr(wt), fptr_mut(y)});
  const bool gx = x_in.requires_grad(), gw = w_in.requires_grad();
  attach_grad_fn(y, "conv_transpose2d", {&x_in, &w_in}, [x = x.detach(), wt = wt.detach(), g, gx, gw](const Tensor& dy_in) {
    Tensor dy = dy_in.contiguous(), dx, dw;
    if (gx) {
      dx = make_tensor(x.shape(), DType::f32, x.device());
      launch(x, ops::Conv2dForward{g, fptr(dy), fptr(wt), nullptr, fptr_mut(dx)});
    }
    if (gw) {
      dw = make_tensor(wt.shape(), DType::f32, x.device());
      launch(x, ops::Conv2dBackwardWeight{g, fptr(dy), fptr(x), fptr_mut(dw), nullptr});
    }
    return std::vector<Tensor>{dx, dw};
  });
  if (!bias.defined()) return y;
  if (bias.dim() != 1 || bias.size(0) != cout)
    throw Error("conv_transpose2d: bias shape " + shape_str(bias.shape()) + " does not match " +
                std::to_string(cout) + " output channels");
  return add(y, bias.reshape({1, cout, 1, 1}));
}

}  // namespace gdrt
