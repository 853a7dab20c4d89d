// Tensor factories, seeded random tensors, in-place updates.
#include <cmath>
#include <cstring>

#include "core/impl.h"
#include "gdrt/ops.h"
#include "ops/scalar_elementwise.h"

namespace gdrt {

static Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}

Tensor empty(Shape shape, TensorOptions o) { return finish(make_tensor(shape, o.dtype, o.device), o); }

Tensor full(Shape shape, double value, TensorOptions o) {
  Tensor t = make_tensor(shape, o.dtype, o.device);
  launch(t, ops::Fill{t.kernel_view(), value});
  return finish(t, o);
}
Tensor zeros(Shape shape, TensorOptions o) { return full(std::move(shape), 0.0, o); }
Tensor ones(Shape shape, TensorOptions o) { return full(std::move(shape), 1.0, o); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), TensorOptions{t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), TensorOptions{t.dtype(), t.device()}); }
Tensor scalar_tensor(double value, TensorOptions o) { return full({}, value, o); }

Tensor arange(double start, double end, double step, TensorOptions o) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end))
    throw Error("arange(" + std::to_string(start) + ", " + std::to_string(end) + ", " + std::to_string(step) +
                "): step must be non-zero and bounds finite");
  const auto n = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((end - start) / step)));
  std::vector<double> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  return finish(from_vector<double>(values, {n}).to(o.dtype).to(o.device), o);
}

template <class T>
static DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  else return DType::boolean;
}

template <class T>
Tensor from_data(std::span<const T> data, Shape shape, TensorOptions o) {
  if (static_cast<std::int64_t>(data.size()) != shape_numel(shape))
    throw Error("from_data: " + std::to_string(data.size()) + " values cannot fill shape " + shape_str(shape) +
                " (" + std::to_string(shape_numel(shape)) + " elements)");
  Tensor host = make_tensor(shape, dtype_of<T>(), cpu_device());
  if constexpr (std::is_same_v<T, bool>) {
    auto* p = static_cast<std::uint8_t*>(host.data_ptr());
    for (std::size_t i = 0; i < data.size(); ++i) p[i] = data[i] ? 1 : 0;
  } else if (!data.empty()) {
    std::memcpy(host.data_ptr(), data.data(), data.size() * sizeof(T));
  }
  return finish(host.to(o.device), o);
}
template Tensor from_data<float>(std::span<const float>, Shape, TensorOptions);
template Tensor from_data<double>(std::span<const double>, Shape, TensorOptions);
template Tensor from_data<std::int32_t>(std::span<const std::int32_t>, Shape, TensorOptions);
template Tensor from_data<std::int64_t>(std::span<const std::int64_t>, Shape, TensorOptions);
template Tensor from_data<std::uint8_t>(std::span<const std::uint8_t>, Shape, TensorOptions);
template Tensor from_data<bool>(std::span<const bool>, Shape, TensorOptions);

// The kernels' mixer over (seed, counter).
std::uint64_t Generator::next_u64() { return scalar::mix(seed_, offset_++); }

static Tensor random_tensor(Shape shape, Distribution d, double a, double b, Generator& gen, TensorOptions o) {
  if (!is_floating(o.dtype)) throw Error("random tensors must be floating point, got " + std::string(dtype_name(o.dtype)));
  Tensor t = make_tensor(shape, o.dtype, o.device);
  const auto n = static_cast<std::uint64_t>(t.numel());
  launch(t, ops::Random{t.kernel_view(), d, gen.seed(), gen.advance(n), a, b});
  return finish(t, o);
}
Tensor rand(Shape shape, Generator& gen, TensorOptions o) {
  return random_tensor(std::move(shape), Distribution::uniform, 0, 1, gen, o);
}
Tensor uniform(Shape shape, double low, double high, Generator& gen, TensorOptions o) {
  return random_tensor(std::move(shape), Distribution::uniform, low, high, gen, o);
}
Tensor randn(Shape shape, Generator& gen, TensorOptions o) {
  return random_tensor(std::move(shape), Distribution::normal, 0, 1, gen, o);
}

static void check_inplace(const Tensor& t, const char* op) {
  if (grad_enabled() && t.requires_grad())
    throw Error(std::string(op) + " on " + t.describe() + " which requires grad: in-place updates would corrupt "
                "the gradient. Do parameter updates inside a gdrt::NoGrad scope.");
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  check_same_device("copy_", *this, src);
  Tensor s = src.shape() == shape() ? src : src.expand(shape());
  launch(*this, ops::Copy{kernel_view(), s.kernel_view()});
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  launch(*this, ops::Fill{kernel_view(), value});
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_inplace(*this, "add_");
  check_binary_dtypes("add_", *this, other);
  Tensor o = alpha == 1.0 ? other : mul(other.detach(), alpha);
  Tensor s = o.shape() == shape() ? o : o.expand(shape());
  launch(*this, ops::Binary{BinaryOp::add, kernel_view(), kernel_view(), s.kernel_view()});
  return *this;
}

Tensor& Tensor::mul_(double value) {
  check_inplace(*this, "mul_");
  check_float("mul_", *this);
  Tensor s = full({}, value, TensorOptions{dtype(), device()}).expand(shape());
  launch(*this, ops::Binary{BinaryOp::mul, kernel_view(), kernel_view(), s.kernel_view()});
  return *this;
}

}  // namespace gdrt
