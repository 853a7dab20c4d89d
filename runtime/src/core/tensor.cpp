// Tensor handle basics: metadata, storage, transfers between devices/dtypes.
#include <atomic>
#include <cstring>

#include "core/hooks.h"
#include "core/impl.h"
#include "gdrt/ops.h"
#include "ops/scalar_convert.h"

namespace gdrt {

namespace {
// Live storage bytes per device kind and index (memory_allocated); indexes
// past the table are not counted.
constexpr int kCountedIndexes = 64;
constexpr int kDeviceKinds = static_cast<int>(DeviceKind::cuda) + 1;  // cuda is the last kind
std::atomic<std::size_t> live_storage[kDeviceKinds][kCountedIndexes];

std::atomic<std::size_t>* live_counter(const Device& d) {
  if (d.index < 0 || d.index >= kCountedIndexes) return nullptr;
  return &live_storage[static_cast<int>(d.kind)][d.index];
}
}  // namespace

std::size_t memory_allocated(const Device& device) {
  const auto* counter = live_counter(device);
  return counter ? counter->load(std::memory_order_relaxed) : 0;
}

Storage::Storage(Backend& b, std::size_t n, StreamId s)
    : backend(&b), data(b.allocate(n, s)), bytes(n),
      kind(b.device().is_cpu() ? MemoryKind::host_pageable : MemoryKind::device), stream(s) {
  hooks::allocated(b.device(), data, bytes, kind, stream);
  if (auto* counter = live_counter(b.device())) counter->fetch_add(bytes, std::memory_order_relaxed);
}
Storage::Storage(Backend& b, void* d, std::size_t n, MemoryKind k) : backend(&b), data(d), bytes(n), kind(k) {
  hooks::allocated(b.device(), data, bytes, kind, stream);
}
std::shared_ptr<Storage> Storage::pinned(Backend& pinning, std::size_t n) {
  return std::shared_ptr<Storage>(new Storage(pinning, pinning.allocate_pinned(n), n, MemoryKind::host_pinned));
}
Storage::~Storage() {
  hooks::freed(backend->device(), data, bytes, kind, stream, used_on);
  if (kind != MemoryKind::host_pinned)
    if (auto* counter = live_counter(backend->device())) counter->fetch_sub(bytes, std::memory_order_relaxed);
  try {
    if (kind == MemoryKind::host_pinned)
      backend->deallocate_pinned(data, bytes);
    else
      backend->deallocate(data, bytes, stream, used_on);
  } catch (const Error&) {
    // A device that failed cannot take memory back; a destructor must not
    // throw, and the failure was reported where it happened.
  }
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

static Tensor tensor_on(std::shared_ptr<Storage> storage, const Shape& sizes, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

static std::size_t storage_bytes(const Shape& sizes, DType dtype) {
  for (auto s : sizes)
    if (s < 0) throw Error("negative dimension in shape " + shape_str(sizes));
  return std::max<std::size_t>(static_cast<std::size_t>(shape_numel(sizes)) * itemsize(dtype), 1);
}

Tensor make_tensor(const Shape& sizes, DType dtype, Device device) {
  const auto bytes = storage_bytes(sizes, dtype);
  return tensor_on(std::make_shared<Storage>(backend(device), bytes, current_stream_id(device)), sizes, dtype, device);
}

Tensor make_pinned(const Shape& sizes, DType dtype, Device accelerator) {
  const auto bytes = storage_bytes(sizes, dtype);
  return tensor_on(Storage::pinned(backend(accelerator), bytes), sizes, dtype, cpu_device());
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

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = make_tensor(shape(), dtype(), device());
  launch(*this, ops::Copy{out.kernel_view(), kernel_view()});
  attach_grad_fn(out, "clone", {this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::detach() const { return make_view(*this, shape(), strides(), offset()); }

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = make_tensor(shape(), target, device());
  launch(*this, ops::Copy{out.kernel_view(), kernel_view()});
  if (is_floating(target) && is_floating(dtype()) && target != DType::f16) {
    const DType source = dtype();
    attach_grad_fn(out, "to_dtype", {this}, [source](const Tensor& g) { return std::vector<Tensor>{g.to(source)}; });
  }
  return out;
}

Tensor Tensor::to(Device target, bool non_blocking) const {
  if (target == device()) return *this;
  const Device source = device();
  Tensor out;
  if (!source.is_cpu() && !target.is_cpu()) {
    // Neither backend owns the other's pointers: stage through the host.
    out = to(cpu_device(), false).to(target, non_blocking).detach();
  } else {
    Tensor src = contiguous();
    const auto bytes = static_cast<std::size_t>(numel()) * itemsize(dtype());
    const Device accelerator = source.is_cpu() ? target : source;
    const StreamId stream = current_stream_id(accelerator);
    // A non-blocking copy to the host lands in pinned memory, as PyTorch's
    // does, so it really is asynchronous (and reading it early is GD003).
    out = target.is_cpu() && non_blocking ? make_pinned(shape(), dtype(), accelerator)
                                          : make_tensor(shape(), dtype(), target);
    copy_bytes(accelerator, out.data_ptr(), memory_kind(out), src.data_ptr(), memory_kind(src), bytes, stream,
               non_blocking);
    if (!non_blocking) wait_for(accelerator, stream);
  }
  attach_grad_fn(out, "to_device", {this}, [source](const Tensor& g) { return std::vector<Tensor>{g.to(source)}; });
  return out;
}

void move_in_place(const Tensor& t, Device device) {
  if (!t.defined() || t.device() == device) return;
  Tensor moved;
  {
    NoGrad ng;
    moved = t.detach().to(device);
  }
  TensorImpl& impl = *t.impl();
  impl.storage = moved.impl()->storage;
  impl.strides = moved.strides();
  impl.offset = moved.offset();
  impl.device = device;
  if (impl.grad) move_in_place(Tensor(impl.grad), device);
}

Tensor Tensor::pin_memory(Device accelerator) const {
  if (!device().is_cpu())
    throw Error("pin_memory(): " + describe() + " is not on cpu; only host memory can be pinned");
  if (is_pinned()) return *this;
  Tensor src = contiguous();
  Tensor out = make_pinned(shape(), dtype(), accelerator);
  if (numel()) std::memcpy(out.data_ptr(), src.data_ptr(), static_cast<std::size_t>(numel()) * itemsize(dtype()));
  return out;
}

bool Tensor::is_pinned() const { return need(impl_).storage->kind == MemoryKind::host_pinned; }

void Tensor::record_stream(const Stream& stream) const {
  Storage& s = *need(impl_).storage;
  if (!(stream.device() == device()))
    throw Error("record_stream(): " + describe() + " cannot be used on a stream of " + stream.device().str());
  if (stream.id() == s.stream) return;
  for (StreamId id : s.used_on)
    if (id == stream.id()) return;
  s.used_on.push_back(stream.id());
}

// The host touched a pinned buffer: recorded so that a read before the
// copy into it is synchronised shows as GD003.
static void note_host_read(const Tensor& t, const void* p, std::size_t bytes) {
  const Storage& s = *t.impl()->storage;
  if (s.kind == MemoryKind::host_pinned) hooks::host_access(s.backend->device(), p, bytes, false);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(cpu_device()).detach().contiguous();
  note_host_read(host, host.data_ptr(), static_cast<std::size_t>(host.numel()) * itemsize(host.dtype()));
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
  const char* p = static_cast<const char*>(impl_->storage->data) + off * static_cast<std::int64_t>(itemsize(dtype()));
  if (device().is_cpu()) {
    note_host_read(*this, p, itemsize(dtype()));
    return scalar::load_double(p, dtype(), 0);
  }
  if (!scalar_allowed()) {
    const std::string msg = "scalar access (item()/at()) on " + describe() +
                            ": each call is a synchronous device-to-host copy of one element, which makes loops "
                            "crawl. Compute on the device and copy the result once with .to(cpu_device()) or "
                            "to_vector(); if you really need one element, wrap the access in gdrt::AllowScalar.";
    hooks::finding("GD005", msg);
    throw Error("GD005", msg);
  }
  // What cudaMemcpy of one element does: a small copy, then a wait.
  alignas(8) unsigned char buf[8];
  const StreamId stream = current_stream_id(device());
  copy_bytes(device(), buf, MemoryKind::host_pageable, p, MemoryKind::device, itemsize(dtype()), stream, false);
  wait_for(device(), stream);
  return scalar::load_double(buf, dtype(), 0);
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error("item(): expected a one-element tensor, got shape " + shape_str(shape()));
  if (dim() == 0) return at({});
  return reshape({1}).detach().at({0});
}

}  // namespace gdrt
