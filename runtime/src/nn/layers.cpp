// Conv2d, ConvTranspose2d, BatchNorm2d with PyTorch's default initialisation.
#include <cmath>

#include "core/impl.h"
#include "gdrt/nn.h"

namespace gdrt::nn {

// kaiming_uniform_(a=sqrt(5)) on the weight gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// the same bound PyTorch uses for the bias.
static Tensor init_uniform(Shape shape, std::int64_t fan_in, Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(1, fan_in)));
  return uniform(std::move(shape), -bound, bound, gen);
}

Conv2d::Conv2d(std::int64_t in, std::int64_t out, std::int64_t k, Conv2dOptions options, bool with_bias, Generator& gen)
    : options_(options) {
  weight = init_uniform({out, in, k, k}, in * k * k, gen);
  if (with_bias) bias = init_uniform({out}, in * k * k, gen);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, options_); }

ConvTranspose2d::ConvTranspose2d(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride, bool with_bias,
                                 Generator& gen)
    : stride_(stride) {
  // PyTorch computes fan_in from weight.size(1) * k * k for transposed convs.
  weight = init_uniform({in, out, k, k}, out * k * k, gen);
  if (with_bias) bias = init_uniform({out}, out * k * k, gen);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor ConvTranspose2d::forward(const Tensor& x) { return conv_transpose2d(x, weight, bias, {stride_, 0, 1}); }

BatchNorm2d::BatchNorm2d(std::int64_t c, double eps, double momentum) : eps_(eps), momentum_(momentum) {
  weight = ones({c});
  bias = zeros({c});
  running_mean = zeros({c});
  running_var = ones({c});
  num_batches_tracked = zeros({}, TensorOptions{}.with_dtype(DType::i64));
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

Tensor BatchNorm2d::forward(const Tensor& x) { return run(x, false); }
Tensor BatchNorm2d::forward_relu(const Tensor& x) { return run(x, true); }

Tensor BatchNorm2d::run(const Tensor& x, bool relu) {
  if (x.dim() != 4 || x.size(1) != weight.size(0))
    throw Error("BatchNorm2d(" + std::to_string(weight.size(0)) + "): expected input [N, " +
                std::to_string(weight.size(0)) + ", H, W], got " + shape_str(x.shape()));
  if (is_training()) {
    NoGrad ng;
    num_batches_tracked.add_(ones({}, TensorOptions{DType::i64, num_batches_tracked.device()}));
  }
  return (relu ? batch_norm_relu : batch_norm)(x, weight, bias, running_mean, running_var, is_training(), momentum_,
                                               eps_);
}

}  // namespace gdrt::nn
