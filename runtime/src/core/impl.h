// Internal: what a Tensor handle points to, and helpers shared by the ops.
#pragma once

#include <memory>
#include <string>

#include "gdrt/autograd.h"
#include "gdrt/backend.h"
#include "gdrt/error.h"
#include "gdrt/tensor.h"

namespace gdrt {

// Memory owned by one backend; freed through it when the last view goes.
struct Storage {
  Storage(Backend& backend, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Backend* backend;
  void* data;
  std::size_t bytes;
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
Kernels& kernels_for(const Tensor& t);
// The grad accumulator node of a leaf that requires grad (created lazily).
std::shared_ptr<Node> grad_edge(const Tensor& t);

}  // namespace gdrt
