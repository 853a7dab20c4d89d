// Broadcasting binary ops and their gradients: add, sub, mul, div, maximum,
// minimum, pow, comparisons, and the operator overloads.
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const std::int64_t y = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      throw Error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast together (dimension " + std::to_string(i) + ": " + std::to_string(x) +
                  " vs " + std::to_string(y) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

TensorView broadcast_view(const Tensor& t, const Shape& shape) {
  TensorView v = t.kernel_view();
  const std::size_t lead = shape.size() - v.sizes.size();
  Shape strides(shape.size(), 0);
  for (std::size_t i = lead; i < shape.size(); ++i)
    strides[i] = v.sizes[i - lead] == shape[i] ? v.strides[i - lead] : 0;
  v.sizes = shape;
  v.strides = std::move(strides);
  return v;
}

Tensor scalar_like(const Tensor& t, double value) { return full({}, value, TensorOptions{t.dtype(), t.device()}); }

Tensor binary_raw(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  const DType dtype = check_binary_dtypes(name, a, b);
  if (dtype == DType::f16 || dtype == DType::boolean)
    throw Error(std::string(name) + ": arithmetic on " + std::string(dtype_name(dtype)) +
                " tensors is not supported; convert with .to(DType::f32) first");
  const Tensor& x = a.dtype() == dtype ? a : a.to(dtype);
  const Tensor& y = b.dtype() == dtype ? b : b.to(dtype);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  const bool cmp = op >= BinaryOp::gt;
  Tensor out = make_tensor(shape, cmp ? DType::boolean : dtype, a.device());
  launch(a, ops::Binary{op, out.kernel_view(), broadcast_view(x, shape), broadcast_view(y, shape)});
  return out;
}

Tensor unary_raw(UnaryOp op, const Tensor& x, double alpha) {
  Tensor out = make_tensor(x.shape(), x.dtype(), x.device());
  launch(x, ops::Unary{op, out.kernel_view(), x.kernel_view(), alpha});
  return out;
}

// Float mask of a comparison, for gradients.
static Tensor mask(BinaryOp op, const Tensor& a, const Tensor& b) {
  return binary_raw(op, "mask", a, b).to(a.dtype());
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(BinaryOp::add, "add", a, b);
  attach_grad_fn(out, "add", {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(BinaryOp::sub, "sub", a, b);
  attach_grad_fn(out, "sub", {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(neg(g), sb)};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(BinaryOp::mul, "mul", a, b);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  attach_grad_fn(out, "mul", {&a, &b}, [a = a.detach(), b = b.detach(), ga, gb](const Tensor& g) {
    return std::vector<Tensor>{ga ? sum_to(mul(g, b), a.shape()) : Tensor(), gb ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(BinaryOp::div, "div", a, b);
  const bool gb = b.requires_grad();
  attach_grad_fn(out, "div", {&a, &b}, [a = a.detach(), b = b.detach(), gb](const Tensor& g) {
    Tensor ga = sum_to(div(g, b), a.shape());
    Tensor gbv = gb ? sum_to(neg(div(mul(g, a), mul(b, b))), b.shape()) : Tensor();
    return std::vector<Tensor>{ga, gbv};
  });
  return out;
}

// Ties split the gradient evenly, as PyTorch does.
static Tensor extremum(BinaryOp op, BinaryOp wins, const char* name, const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(op, name, a, b);
  attach_grad_fn(out, name, {&a, &b}, [a = a.detach(), b = b.detach(), wins](const Tensor& g) {
    Tensor tie = mul(mask(BinaryOp::eq, a, b), 0.5);
    Tensor wa = add(mask(wins, a, b), tie), wb = add(mask(wins, b, a), tie);
    return std::vector<Tensor>{sum_to(mul(g, wa), a.shape()), sum_to(mul(g, wb), b.shape())};
  });
  return out;
}
Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::maximum, BinaryOp::gt, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::minimum, BinaryOp::lt, "minimum", a, b); }

Tensor pow(const Tensor& a, double exponent) {
  check_float("pow", a);
  Tensor out = binary_raw(BinaryOp::pow, "pow", a, scalar_like(a, exponent));
  attach_grad_fn(out, "pow", {&a}, [a = a.detach(), exponent](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul(pow(a, exponent - 1), exponent))};
  });
  return out;
}

Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor rsub(double a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor rdiv(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

Tensor gt(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::gt, "gt", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::lt, "lt", a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::eq, "eq", a, b); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b)); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return rsub(a, b); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }

}  // namespace gdrt
