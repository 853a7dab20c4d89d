// max_pool2d and batch_norm with their gradients.
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {

Tensor max_pool2d(const Tensor& x_in, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  if (x_in.dim() != 4) throw Error("max_pool2d: input must be 4-D [N, C, H, W], got " + shape_str(x_in.shape()));
  if (x_in.dtype() != DType::f32) throw Error("max_pool2d computes in float32, got " + x_in.describe());
  if (stride == 0) stride = kernel;
  if (kernel < 1 || stride < 1 || padding < 0 || padding * 2 > kernel)
    throw Error("max_pool2d: need kernel >= 1, stride >= 1 and 0 <= padding <= kernel/2 (got kernel " +
                std::to_string(kernel) + ", stride " + std::to_string(stride) + ", padding " +
                std::to_string(padding) + ")");
  PoolGeometry g{x_in.size(0), x_in.size(1), x_in.size(2), x_in.size(3), kernel, kernel, stride, stride,
                 padding, padding, 0, 0};
  if (g.in_h + 2 * padding < kernel || g.in_w + 2 * padding < kernel)
    throw Error("max_pool2d: input " + shape_str(x_in.shape()) + " is smaller than the kernel " + std::to_string(kernel));
  g.out_h = (g.in_h + 2 * padding - kernel) / stride + 1;
  g.out_w = (g.in_w + 2 * padding - kernel) / stride + 1;
  if (g.out_h <= 0 || g.out_w <= 0)
    throw Error("max_pool2d: input " + shape_str(x_in.shape()) + " is smaller than the kernel " + std::to_string(kernel));
  Tensor x = x_in.contiguous();
  Tensor y = make_tensor({g.batch, g.channels, g.out_h, g.out_w}, DType::f32, x.device());
  Tensor argmax = make_tensor(y.shape(), DType::i32, x.device());
  launch(x, ops::MaxPool2dForward{g, static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()),
                                  static_cast<std::int32_t*>(argmax.data_ptr())});
  attach_grad_fn(y, "max_pool2d", {&x_in}, [argmax, g, shape = x.shape(), dev = x.device()](const Tensor& dy_in) {
    Tensor dy = dy_in.contiguous();
    Tensor dx = make_tensor(shape, DType::f32, dev);
    launch(dy, ops::MaxPool2dBackward{g, static_cast<const float*>(dy.data_ptr()),
                                      static_cast<const std::int32_t*>(argmax.data_ptr()),
                                      static_cast<float*>(dx.data_ptr())});
    return std::vector<Tensor>{dx};
  });
  return y;
}

static void check_channel_param(const Tensor& x, const Tensor& p, const char* what) {
  if (!p.defined()) return;
  check_same_device("batch_norm", x, p);
  if (p.dim() != 1 || p.size(0) != x.size(1) || p.dtype() != DType::f32)
    throw Error(std::string("batch_norm: ") + what + " must be f32[" + std::to_string(x.size(1)) + "] for input " +
                shape_str(x.shape()) + ", got " + p.describe());
}

static const float* cptr(const Tensor& t) { return t.defined() ? static_cast<const float*>(t.data_ptr()) : nullptr; }
static float* mptr(const Tensor& t) { return t.defined() ? static_cast<float*>(t.data_ptr()) : nullptr; }

namespace {

Tensor batch_norm_impl(const Tensor& x_in, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps, bool relu) {
  if (x_in.dim() < 2) throw Error("batch_norm: input must be [N, C, ...], got " + shape_str(x_in.shape()));
  if (x_in.dtype() != DType::f32) throw Error("batch_norm computes in float32, got " + x_in.describe());
  check_channel_param(x_in, weight, "weight");
  check_channel_param(x_in, bias, "bias");
  check_channel_param(x_in, running_mean, "running_mean");
  check_channel_param(x_in, running_var, "running_var");
  if (!training && (!running_mean.defined() || !running_var.defined()))
    throw Error("batch_norm in eval mode needs running_mean and running_var");
  for (const Tensor* r : {&running_mean, &running_var})
    if (r->defined() && !r->is_contiguous()) throw Error("batch_norm: running statistics must be contiguous");
  const std::int64_t n = x_in.size(0), c = x_in.size(1), hw = x_in.numel() / std::max<std::int64_t>(1, n * c);
  if (training && n * hw <= 1)
    throw Error("batch_norm: training needs more than one value per channel, got input " + shape_str(x_in.shape()));
  Tensor x = x_in.contiguous(), w = weight.defined() ? weight.contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = make_tensor(x.shape(), DType::f32, x.device());
  Tensor mean_t, invstd_t;
  if (training) {
    mean_t = make_tensor({c}, DType::f32, x.device());
    invstd_t = make_tensor({c}, DType::f32, x.device());
    launch(x, ops::BatchNormTrain{n, c, hw, cptr(x), cptr(w), cptr(b), mptr(running_mean), mptr(running_var),
                                  momentum, eps, mptr(y), mptr(mean_t), mptr(invstd_t), relu});
  } else {
    launch(x, ops::BatchNormEval{n, c, hw, cptr(x), cptr(w), cptr(b), cptr(running_mean), cptr(running_var), eps,
                                 mptr(y), relu});
    NoGrad ng;
    mean_t = running_mean.detach().clone();
    invstd_t = unary_raw(UnaryOp::rsqrt, add(running_var.detach(), eps));
  }
  const bool gw = weight.defined() && weight.requires_grad(), gb = bias.defined() && bias.requires_grad();
  const bool gx = x_in.requires_grad();
  attach_grad_fn(y, relu ? "batch_norm_relu" : "batch_norm", {&x_in, &weight, &bias},
                 [x = x.detach(), w = w.defined() ? w.detach() : Tensor(), mean_t, invstd_t, training, n, c, hw, gx, gw,
                  gb, y_out = relu ? y.detach() : Tensor()](const Tensor& dy_in) {
                   Tensor dy = dy_in.contiguous();
                   Tensor dx = gx ? make_tensor(x.shape(), DType::f32, x.device()) : Tensor();
                   Tensor dw = gw ? make_tensor({c}, DType::f32, x.device()) : Tensor();
                   Tensor db = gb ? make_tensor({c}, DType::f32, x.device()) : Tensor();
                   launch(x, ops::BatchNormBackward{n, c, hw, cptr(x), cptr(dy), cptr(w), cptr(mean_t),
                                                    cptr(invstd_t), training, cptr(y_out), mptr(dx), mptr(dw),
                                                    mptr(db)});
                   return std::vector<Tensor>{dx, dw, db};
                 });
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps, false);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps, true);
}

}  // namespace gdrt
