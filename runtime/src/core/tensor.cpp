// Tensor handle basics: metadata, storage, transfers between devices/dtypes.
#include <cstring>

#include "core/hooks.h"
#include "core/impl.h"
#include "gdrt/ops.h"

namespace gdrt {

Storage::Storage(Backend& b, std::size_t n) : backend(&b), data(b.allocate(n)), bytes(n) {
  hooks::allocated(b.device(), data, bytes);
}
Storage::~Storage() {
  hooks::freed(backend->device(), data, bytes);
  backend->deallocate(data, bytes);
}

std::int64_t shape_numel(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::string shape_str(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  std::int64_t st = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = st;
    st *= std::max<std::int64_t>(sizes[i], 1);
  }
  return strides;
}

Tensor make_tensor(const Shape& sizes, DType dtype, Device device) {
  for (auto s : sizes)
    if (s < 0) throw Error("negative dimension in shape " + shape_str(sizes));
  auto impl = std::make_shared<TensorImpl>();
  const auto n = static_cast<std::size_t>(shape_numel(sizes));
  impl->storage = std::make_shared<Storage>(backend(device), std::max<std::size_t>(n * itemsize(dtype), 1));
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  impl->device = base.device();
  return Tensor(std::move(impl));
}

static const TensorImpl& need(const std::shared_ptr<TensorImpl>& p) {
  if (!p) throw Error("use of an undefined (default-constructed) gdrt::Tensor");
  return *p;
}

const Shape& Tensor::shape() const { return need(impl_).sizes; }
const Shape& Tensor::strides() const { return need(impl_).strides; }
std::int64_t Tensor::size(std::int64_t d) const { return shape()[normalize_dim(d, dim(), "size")]; }
std::int64_t Tensor::numel() const { return shape_numel(shape()); }
std::int64_t Tensor::offset() const { return need(impl_).offset; }
DType Tensor::dtype() const { return need(impl_).dtype; }
Device Tensor::device() const { return need(impl_).device; }
bool Tensor::is_contiguous() const { return kernel_view().is_contiguous(); }

std::string Tensor::describe() const {
  if (!impl_) return "undefined tensor";
  const char* short_names[] = {"f32", "f64", "f16", "i32", "i64", "u8", "bool"};
  return std::string(short_names[static_cast<int>(dtype())]) + shape_str(shape()) + " on " + device().str();
}

void* Tensor::data_ptr() const {
  const auto& i = need(impl_);
  return static_cast<char*>(i.storage->data) + i.offset * static_cast<std::int64_t>(itemsize(i.dtype));
}

TensorView Tensor::kernel_view() const {
  return TensorView{data_ptr(), dtype(), shape(), strides()};
}

std::int64_t TensorView::numel() const { return shape_numel(sizes); }
bool TensorView::is_contiguous() const {
  std::int64_t st = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != st) return false;
    st *= sizes[i];
  }
  return true;
}

Kernels& traced_kernels(Kernels& inner, const Device& device);  // core/traced_kernels.cpp

Kernels& kernels_for(const Tensor& t) {
  Backend& b = *t.impl()->storage->backend;
  return hooks::recording() ? traced_kernels(b.kernels(), b.device()) : b.kernels();
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = make_tensor(shape(), dtype(), device());
  kernels_for(*this).copy(out.kernel_view(), kernel_view());
  attach_grad_fn(out, "clone", {this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::detach() const { return make_view(*this, shape(), strides(), offset()); }

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = make_tensor(shape(), target, device());
  kernels_for(*this).copy(out.kernel_view(), kernel_view());
  if (is_floating(target) && is_floating(dtype()) && target != DType::f16) {
    const DType source = dtype();
    attach_grad_fn(out, "to_dtype", {this}, [source](const Tensor& g) { return std::vector<Tensor>{g.to(source)}; });
  }
  return out;
}

static MemoryKind kind_of(const Device& d) { return d.is_cpu() ? MemoryKind::host_pageable : MemoryKind::device; }

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor src = contiguous();
  Tensor out = make_tensor(shape(), dtype(), target);
  const auto bytes = static_cast<std::size_t>(numel()) * itemsize(dtype());
  // The non-host side's backend performs a copy that crosses devices.
  Backend& b = target.is_cpu() ? *src.impl()->storage->backend : *out.impl()->storage->backend;
  if (bytes) {
    const auto start = hooks::now_ns();
    b.copy(out.data_ptr(), kind_of(target), src.data_ptr(), kind_of(device()), bytes, 0);
    hooks::copied(b.device(), out.data_ptr(), kind_of(target), src.data_ptr(), kind_of(device()), bytes, start,
                  hooks::now_ns());
  }
  const Device source = device();
  attach_grad_fn(out, "to_device", {this}, [source](const Tensor& g) { return std::vector<Tensor>{g.to(source)}; });
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(cpu_device()).detach().contiguous();
  const DType want = std::is_same_v<T, float> ? DType::f32 : std::is_same_v<T, double> ? DType::f64
                     : std::is_same_v<T, std::int32_t> ? DType::i32 : std::is_same_v<T, std::int64_t> ? DType::i64
                     : std::is_same_v<T, std::uint8_t> ? DType::u8 : DType::boolean;
  if (host.dtype() != want) host = host.to(want);
  std::vector<T> out(static_cast<std::size_t>(host.numel()));
  if (!out.empty()) std::memcpy(static_cast<void*>(out.data()), host.data_ptr(), out.size() * sizeof(T));
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;
template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;

static double read_host_element(const void* p, DType dtype) {
  switch (dtype) {
    case DType::f32: return *static_cast<const float*>(p);
    case DType::f64: return *static_cast<const double*>(p);
    case DType::f16: return half_to_float(*static_cast<const std::uint16_t*>(p));
    case DType::i32: return *static_cast<const std::int32_t*>(p);
    case DType::i64: return static_cast<double>(*static_cast<const std::int64_t*>(p));
    case DType::u8: return *static_cast<const std::uint8_t*>(p);
    case DType::boolean: return *static_cast<const std::uint8_t*>(p) ? 1.0 : 0.0;
  }
  return 0;
}

double Tensor::at(std::initializer_list<std::int64_t> index) const {
  if (static_cast<std::int64_t>(index.size()) != dim())
    throw Error("at(): " + std::to_string(index.size()) + " indices for a tensor of shape " + shape_str(shape()));
  std::int64_t off = offset();
  std::size_t d = 0;
  for (auto i : index) {
    if (i < 0 || i >= shape()[d])
      throw Error("at(): index " + std::to_string(i) + " out of range for dimension " + std::to_string(d) +
                  " of shape " + shape_str(shape()));
    off += i * strides()[d++];
  }
  Backend& b = *impl_->storage->backend;
  const char* p = static_cast<const char*>(impl_->storage->data) + off * static_cast<std::int64_t>(itemsize(dtype()));
  if (b.host_accessible()) return read_host_element(p, dtype());
  if (!scalar_allowed()) {
    const std::string msg = "scalar access (item()/at()) on " + describe() +
                            ": each call is a synchronous device-to-host copy of one element, which makes loops "
                            "crawl. Compute on the device and copy the result once with .to(cpu_device()) or "
                            "to_vector(); if you really need one element, wrap the access in gdrt::AllowScalar.";
    hooks::finding("GD005", msg);
    throw Error("GD005", msg);
  }
  hooks::host_read(device(), p, itemsize(dtype()));
  alignas(8) unsigned char buf[8];
  b.copy(buf, MemoryKind::host_pageable, p, MemoryKind::device, itemsize(dtype()), 0);
  b.synchronize(0);
  return read_host_element(buf, dtype());
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error("item(): expected a one-element tensor, got shape " + shape_str(shape()));
  if (dim() == 0) return at({});
  return reshape({1}).detach().at({0});
}

}  // namespace gdrt
