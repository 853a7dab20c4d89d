// Differentiable tensor operations. Every op checks that its tensors share a
// device (GD001) and a floating dtype (GD002 for f32/f64 mixes), broadcasts
// like NumPy, and dispatches to the backend of the tensors' device.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gdrt/tensor.h"

namespace gdrt {

// Elementwise (broadcasting).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor rsub(double a, const Tensor& b);  // a - b
Tensor rdiv(double a, const Tensor& b);  // a / b
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor clamp_min(const Tensor& x, double min);
// Comparisons return bool tensors and have no gradient.
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor sign(const Tensor& x);   // no gradient
Tensor round(const Tensor& x);  // no gradient
Tensor floor(const Tensor& x);  // no gradient

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);

// Activations.
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& x);
// x * sigmoid(x), the activation of diffusion UNets (PyTorch's silu).
Tensor silu(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);
// Zeroes elements with probability p and scales the rest by 1/(1-p) when
// training; identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

// Reductions (empty dims = all dims).
Tensor sum(const Tensor& x, std::vector<std::int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<std::int64_t> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, std::vector<std::int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<std::int64_t> dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);  // int64, no gradient
Tensor logsumexp(const Tensor& x, std::int64_t dim, bool keepdim = false);
// Sums a broadcast gradient back down to `shape`.
Tensor sum_to(const Tensor& x, const Shape& shape);

// Linear algebra: [.., m, k] x [.., k, n] -> [.., m, n] (2-D or batched 3-D).
Tensor matmul(const Tensor& a, const Tensor& b);

// Shape.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim);
Tensor one_hot(const Tensor& labels, std::int64_t classes, std::int64_t class_dim, DType dtype = DType::f32);

// Convolution and pooling (NCHW, f32).
struct Conv2dOptions {
  std::int64_t stride = 1, padding = 0, dilation = 1;
};
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Conv2dOptions options = {});
// weight is [in, out, kh, kw] as in PyTorch.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Conv2dOptions options = {},
                        std::int64_t output_padding = 0);
Tensor max_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0);

// Batch norm over dim 1 of an N,C[,H,W] tensor. In training, running_mean
// and running_var (if defined) are updated in place with `momentum`.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(...)) in one pass forward and one backward node, with the
// same numbers as the two ops (nn::Sequential fuses BatchNorm2d + ReLU this way).
Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

// Losses (mean reduction).
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target);
// logits [N, C, ...], target int64 class indices [N, ...].
Tensor cross_entropy(const Tensor& logits, const Tensor& target);
// 1 - (2 * sum(p * t) + eps) / (sum(p) + sum(t) + eps), with p = sigmoid(logits).
Tensor dice_loss(const Tensor& logits, const Tensor& target, double eps = 1.0);
Tensor mse_loss(const Tensor& input, const Tensor& target);

}  // namespace gdrt
