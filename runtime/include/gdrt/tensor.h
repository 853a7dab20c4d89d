// gdrt::Tensor: a reference-counted handle to (storage, shape, strides,
// offset, dtype, device) plus autograd state. Copies of a Tensor share data.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gdrt/device.h"
#include "gdrt/dtype.h"

namespace gdrt {

class Backend;
class Stream;
struct TensorView;
struct TensorImpl;
class Node;

using Shape = std::vector<std::int64_t>;
std::string shape_str(std::span<const std::int64_t> shape);  // "[2, 3, 4]"
std::int64_t shape_numel(std::span<const std::int64_t> shape);

struct TensorOptions {
  DType dtype = DType::f32;
  Device device{};
  bool requires_grad = false;
  TensorOptions with_dtype(DType d) const { auto o = *this; o.dtype = d; return o; }
  TensorOptions with_device(Device d) const { auto o = *this; o.device = d; return o; }
  TensorOptions with_grad(bool g = true) const { auto o = *this; o.requires_grad = g; return o; }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  std::int64_t dim() const { return static_cast<std::int64_t>(shape().size()); }
  std::int64_t size(std::int64_t d) const;  // negative d counts from the end
  std::int64_t numel() const;
  std::int64_t offset() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  std::string describe() const;  // "f32[2, 3] on cpu"

  // Scalar access. On a device the host cannot read this is GD005 unless an
  // AllowScalar scope is active (then it is a synchronous one-element copy).
  double item() const;
  double at(std::initializer_list<std::int64_t> index) const;
  // Bulk copy of the whole tensor to host memory (always allowed).
  template <class T> std::vector<T> to_vector() const;

  // A copy on `device`. With non_blocking the copy may still be running when
  // this returns (to the host it lands in pinned memory, from pinned memory
  // it is queued), as PyTorch's: synchronise before reading the result.
  Tensor to(Device device, bool non_blocking = false) const;
  // A copy in page-locked host memory that `accelerator` copies to and from
  // asynchronously (cpu tensors only).
  Tensor pin_memory(Device accelerator = preferred_device()) const;
  bool is_pinned() const;
  // Tells the allocator this tensor is used on `stream` too, so its memory
  // is not reused before that stream's work is done (torch record_stream).
  void record_stream(const Stream& stream) const;
  Tensor to(DType dtype) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;  // shares data, no history

  // Views (share storage; differentiable).
  Tensor reshape(Shape shape) const;  // one dim may be -1
  Tensor view(Shape shape) const { return reshape(std::move(shape)); }
  Tensor permute(std::vector<std::int64_t> dims) const;
  Tensor transpose(std::int64_t a, std::int64_t b) const;
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor expand(Shape shape) const;
  Tensor flatten() const { return reshape({-1}); }

  // Autograd.
  bool requires_grad() const;
  Tensor& requires_grad_(bool value = true);
  bool is_leaf() const;
  Tensor grad() const;  // undefined until a backward reaches this leaf
  void set_grad(const Tensor& grad) const;
  void zero_grad() const;  // drops the gradient
  const std::shared_ptr<Node>& grad_fn() const;
  // Reverse-mode differentiation from this tensor. `gradient` defaults to 1
  // for a one-element tensor. The graph is freed unless retain_graph.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;

  // In-place updates (refused on a leaf that requires grad unless NoGrad).
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(double value);
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(double value);

  // Backend access for kernels and extensions.
  TensorView kernel_view() const;
  void* data_ptr() const;  // device pointer of the first element
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Creation.
Tensor empty(Shape shape, TensorOptions options = {});
Tensor zeros(Shape shape, TensorOptions options = {});
Tensor ones(Shape shape, TensorOptions options = {});
Tensor full(Shape shape, double value, TensorOptions options = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});
// Copies host data of type T (float, double, int32_t, int64_t, uint8_t, bool)
// into a new tensor of T's dtype on options.device (options.dtype is ignored;
// convert with .to(DType) if needed).
template <class T>
Tensor from_data(std::span<const T> data, Shape shape, TensorOptions options = {});
template <class T>
Tensor from_vector(const std::vector<T>& data, Shape shape, TensorOptions options = {}) {
  return from_data<T>(std::span<const T>(data), std::move(shape), options);
}
template <>
inline Tensor from_vector<bool>(const std::vector<bool>& data, Shape shape, TensorOptions options) {
  std::unique_ptr<bool[]> copy(new bool[data.size()]);
  for (std::size_t i = 0; i < data.size(); ++i) copy[i] = data[i];
  return from_data<bool>(std::span<const bool>(copy.get(), data.size()), std::move(shape), options);
}

// A seeded generator. Draws are counter-based (seed, offset), so the same
// seed gives the same numbers on every device.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  // Reserves n draws and returns the first offset.
  std::uint64_t advance(std::uint64_t n) { auto o = offset_; offset_ += n; return o; }
  std::uint64_t next_u64();  // host-side draw (shuffling, dropout seeds)

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

Tensor rand(Shape shape, Generator& gen, TensorOptions options = {});   // U[0, 1)
Tensor randn(Shape shape, Generator& gen, TensorOptions options = {});  // N(0, 1)
Tensor uniform(Shape shape, double low, double high, Generator& gen, TensorOptions options = {});

// Scopes (thread-local, nestable).
class NoGrad {  // ops inside record no history
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();

class AllowScalar {  // permits item()/at() on device tensors (GD005)
 public:
  AllowScalar();
  ~AllowScalar();
  AllowScalar(const AllowScalar&) = delete;
  AllowScalar& operator=(const AllowScalar&) = delete;
};
bool scalar_allowed();

// Mixing f32 with f64 is GD002 by default; this scope promotes to f64 instead.
class AllowFloat64Promotion {
 public:
  AllowFloat64Promotion();
  ~AllowFloat64Promotion();
  AllowFloat64Promotion(const AllowFloat64Promotion&) = delete;
  AllowFloat64Promotion& operator=(const AllowFloat64Promotion&) = delete;
};
bool float64_promotion_allowed();

// Threads used by CPU kernels (and the BLAS); 0 = hardware concurrency.
void set_num_threads(int n);
int num_threads();

}  // namespace gdrt
