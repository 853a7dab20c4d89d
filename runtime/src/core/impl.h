// Internal: what a Tensor handle points to, and helpers shared by the ops.
#pragma once

#include <memory>
#include <string>

#include "gdrt/autograd.h"
#include "gdrt/backend.h"
#include "gdrt/error.h"
#include "gdrt/stream.h"
#include "gdrt/tensor.h"

namespace gdrt {

// Memory owned by one backend; freed through it when the last view goes.
// Device memory is freed stream-ordered on the stream it was allocated for,
// after the work of every stream it was recorded on (record_stream), as
// PyTorch's caching allocator. Pinned host memory belongs to the device
// backend that pinned it, though tensors on it are cpu tensors.
struct Storage {
  // Device memory of `backend`, for use on `stream`.
  Storage(Backend& backend, std::size_t bytes, StreamId stream);
  // Pinned host memory from `pinning` (a device backend).
  static std::shared_ptr<Storage> pinned(Backend& pinning, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Backend* backend;
  void* data;
  std::size_t bytes;
  MemoryKind kind = MemoryKind::device;
  StreamId stream = 0;
  std::vector<StreamId> used_on;  // record_stream(), guarded by the tensor's owner

 private:
  Storage(Backend& backend, void* data, std::size_t bytes, MemoryKind kind);
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  std::int64_t offset = 0;
  DType dtype = DType::f32;
  Device device{};
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
  std::shared_ptr<Node> grad_accumulator;  // leaves only, created lazily
};

Shape contiguous_strides(const Shape& sizes);
// A fresh contiguous tensor (uninitialised memory).
Tensor make_tensor(const Shape& sizes, DType dtype, Device device);
// A fresh contiguous cpu tensor in memory `accelerator` pinned.
Tensor make_pinned(const Shape& sizes, DType dtype, Device accelerator);
// Moves `t`'s data (and gradient) to `device` keeping its identity: every
// handle to it, an optimiser's included, sees the moved tensor.
void move_in_place(const Tensor& t, Device device);
// A view sharing `base`'s storage.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, std::int64_t offset);
std::int64_t normalize_dim(std::int64_t dim, std::int64_t rank, const char* op);

// GD001: all defined tensors on one device, else an error naming both.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// GD002/dtype rules for a binary op; returns the result dtype.
DType check_binary_dtypes(const char* op, const Tensor& a, const Tensor& b);
// Refuses arithmetic on dtypes the kernels do not compute (f16, bool...).
void check_float(const char* op, const Tensor& t);
void check_shape(bool ok, const char* op, const std::string& what);
// Queues `op` on `device`'s current stream (recording its pointer arguments
// when a trace is being recorded).
void launch(const Device& device, KernelOp op);
// Copies through `via`'s backend on `stream` (Backend::copy's semantics),
// recorded as a transfer; `async`: the program asked for an asynchronous
// copy (to(device, non_blocking=true)), as cudaMemcpyAsync.
void copy_bytes(const Device& via, void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
                std::size_t bytes, StreamId stream, bool async);
// The host waits for `stream` of `device`, recorded as a synchronisation.
void wait_for(const Device& device, StreamId stream);
inline void launch(const Tensor& on, KernelOp op) { launch(on.device(), std::move(op)); }
// Where a tensor's bytes live, for copies.
inline MemoryKind memory_kind(const Tensor& t) { return t.impl()->storage->kind; }
inline StreamId current_stream_id(const Device& d) { return Stream::current(d).id(); }
// The grad accumulator node of a leaf that requires grad (created lazily).
std::shared_ptr<Node> grad_edge(const Tensor& t);

}  // namespace gdrt
