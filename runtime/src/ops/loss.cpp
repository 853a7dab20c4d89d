// Losses, mean-reduced: BCE-with-logits, cross-entropy, dice, MSE.
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {

static void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  check_binary_dtypes(op, a, b);
  if (a.shape() != b.shape())
    throw Error(std::string(op) + ": input shape " + shape_str(a.shape()) + " and target shape " +
                shape_str(b.shape()) + " must be equal");
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& t) {
  check_same_shape("binary_cross_entropy_with_logits", x, t);
  check_float("binary_cross_entropy_with_logits", x);
  Tensor loss;
  {
    NoGrad ng;  // stable form: max(x, 0) - x*t + log(1 + exp(-|x|))
    loss = mean(add(sub(relu(x), mul(x, t)), log1p(exp(neg(abs(x))))));
  }
  const double scale = 1.0 / static_cast<double>(std::max<std::int64_t>(1, x.numel()));
  const bool gt = t.requires_grad();
  attach_grad_fn(loss, "binary_cross_entropy_with_logits", {&x, &t},
                 [x = x.detach(), t = t.detach(), scale, gt](const Tensor& g) {
                   Tensor s = mul(g, scale);
                   return std::vector<Tensor>{mul(sub(sigmoid(x), t), s), gt ? mul(neg(x), s) : Tensor()};
                 });
  return loss;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  if (logits.dim() < 2) throw Error("cross_entropy: logits must be [N, C, ...], got " + shape_str(logits.shape()));
  check_same_device("cross_entropy", logits, target);
  Shape expect = logits.shape();
  expect.erase(expect.begin() + 1);
  if (target.shape() != expect)
    throw Error("cross_entropy: target shape " + shape_str(target.shape()) + " does not match logits shape " +
                shape_str(logits.shape()) + " (expected " + shape_str(expect) + " class indices)");
  if (target.dtype() != DType::i64 && target.dtype() != DType::i32)
    throw Error("cross_entropy: target must hold integer class indices, got " + target.describe());
  const std::int64_t classes = logits.size(1);
  if (target.numel() > 0 && target.device().is_cpu()) {
    const double lo = amin(target.to(DType::f64)).item(), hi = amax(target.to(DType::f64)).item();
    if (lo < 0 || hi >= static_cast<double>(classes))
      throw Error("cross_entropy: target holds class " + std::to_string(static_cast<std::int64_t>(lo < 0 ? lo : hi)) +
                  " but logits have " + std::to_string(classes) + " classes (valid 0.." + std::to_string(classes - 1) + ")");
  }
  Tensor picked = mul(log_softmax(logits, 1), one_hot(target, classes, 1, logits.dtype()));
  return mul(sum(picked), -1.0 / static_cast<double>(std::max<std::int64_t>(1, target.numel())));
}

Tensor dice_loss(const Tensor& logits, const Tensor& target, double eps) {
  check_same_shape("dice_loss", logits, target);
  Tensor p = sigmoid(logits);
  Tensor inter = sum(mul(p, target));
  Tensor denom = add(add(sum(p), sum(target)), eps);
  return rsub(1.0, div(add(mul(inter, 2.0), eps), denom));
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  check_same_shape("mse_loss", input, target);
  return mean(square(sub(input, target)));
}

}  // namespace gdrt
