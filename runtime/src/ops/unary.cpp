// Unary math and activations with their gradients.
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {

namespace {
Tensor unary_op(UnaryOp op, const char* name, const Tensor& x) {
  check_float(name, x);
  return unary_raw(op, x);
}
}  // namespace

Tensor neg(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::neg, "neg", x);
  attach_grad_fn(y, "neg", {&x}, [](const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
  return y;
}

Tensor exp(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::exp, "exp", x);
  attach_grad_fn(y, "exp", {&x}, [y = y.detach()](const Tensor& g) { return std::vector<Tensor>{mul(g, y)}; });
  return y;
}

Tensor log(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::log, "log", x);
  attach_grad_fn(y, "log", {&x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{div(g, x)}; });
  return y;
}

Tensor log1p(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::log1p, "log1p", x);
  attach_grad_fn(y, "log1p", {&x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{div(g, add(x, 1.0))}; });
  return y;
}

Tensor abs(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::abs, "abs", x);
  attach_grad_fn(y, "abs", {&x}, [x = x.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, unary_raw(UnaryOp::sign, x))};
  });
  return y;
}

Tensor sqrt(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::sqrt, "sqrt", x);
  attach_grad_fn(y, "sqrt", {&x}, [y = y.detach()](const Tensor& g) { return std::vector<Tensor>{div(mul(g, 0.5), y)}; });
  return y;
}

Tensor square(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::square, "square", x);
  attach_grad_fn(y, "square", {&x}, [x = x.detach()](const Tensor& g) { return std::vector<Tensor>{mul(g, mul(x, 2.0))}; });
  return y;
}

Tensor clamp_min(const Tensor& x, double min) {
  check_float("clamp_min", x);
  Tensor y = binary_raw(BinaryOp::maximum, "clamp_min", x, scalar_like(x, min));
  attach_grad_fn(y, "clamp_min", {&x}, [x = x.detach(), min](const Tensor& g) {
    return std::vector<Tensor>{mul(g, binary_raw(BinaryOp::ge, "clamp_min", x, scalar_like(x, min)).to(x.dtype()))};
  });
  return y;
}

Tensor sign(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::sign, "sign", x);
  attach_non_differentiable(y, "sign", {&x});
  return y;
}
Tensor round(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::round, "round", x);
  attach_non_differentiable(y, "round", {&x});
  return y;
}
Tensor floor(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::floor, "floor", x);
  attach_non_differentiable(y, "floor", {&x});
  return y;
}

Tensor relu(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::relu, "relu", x);
  attach_grad_fn(y, "relu", {&x}, [y = y.detach()](const Tensor& g) {
    if (y.dtype() != DType::f32 || g.dtype() != DType::f32 || g.shape() != y.shape())
      return std::vector<Tensor>{mul(g, unary_raw(UnaryOp::positive, y))};
    check_same_device("relu backward", g, y);
    Tensor gc = g.contiguous(), yc = y.contiguous();
    Tensor dx = make_tensor(y.shape(), DType::f32, y.device());
    launch(yc, ops::ReluBackward{yc.numel(), static_cast<const float*>(yc.data_ptr()),
                                 static_cast<const float*>(gc.data_ptr()), static_cast<float*>(dx.data_ptr())});
    return std::vector<Tensor>{dx};
  });
  return y;
}

Tensor leaky_relu(const Tensor& x, double slope) {
  check_float("leaky_relu", x);
  Tensor y = unary_raw(UnaryOp::leaky_relu, x, slope);
  attach_grad_fn(y, "leaky_relu", {&x}, [x = x.detach(), slope](const Tensor& g) {
    Tensor factor = add(mul(unary_raw(UnaryOp::positive, x), 1.0 - slope), slope);
    return std::vector<Tensor>{mul(g, factor)};
  });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::sigmoid, "sigmoid", x);
  attach_grad_fn(y, "sigmoid", {&x}, [y = y.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul(y, rsub(1.0, y)))};
  });
  return y;
}

Tensor silu(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::silu, "silu", x);
  attach_grad_fn(y, "silu", {&x}, [x = x.detach()](const Tensor& g) {
    const Tensor s = sigmoid(x);  // d/dx x*s(x) = s * (1 + x * (1 - s))
    return std::vector<Tensor>{mul(g, mul(s, add(mul(x, rsub(1.0, s)), 1.0)))};
  });
  return y;
}

Tensor tanh(const Tensor& x) {
  Tensor y = unary_op(UnaryOp::tanh, "tanh", x);
  attach_grad_fn(y, "tanh", {&x}, [y = y.detach()](const Tensor& g) {
    return std::vector<Tensor>{mul(g, rsub(1.0, mul(y, y)))};
  });
  return y;
}

Tensor softmax(const Tensor& x, std::int64_t dim) { return exp(log_softmax(x, dim)); }

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  check_float("log_softmax", x);
  return sub(x, logsumexp(x, dim, true));
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (p < 0 || p > 1) throw Error("dropout: probability must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0) return x;
  check_float("dropout", x);
  if (p == 1) return mul(x, 0.0);
  Tensor keep = make_tensor(x.shape(), x.dtype(), x.device());
  launch(x, ops::Random{keep.kernel_view(), Distribution::bernoulli, gen.seed(),
                        gen.advance(static_cast<std::uint64_t>(x.numel())), 1.0 - p, 0});
  keep.mul_(1.0 / (1.0 - p));
  return mul(x, keep);
}

}  // namespace gdrt
