// Argument checks shared by every op; the wording follows the rule catalogue.
#include <string>

#include "core/hooks.h"
#include "core/impl.h"

namespace gdrt {

std::int64_t normalize_dim(std::int64_t dim, std::int64_t rank, const char* op) {
  const std::int64_t r = std::max<std::int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    throw Error(std::string(op) + ": dimension " + std::to_string(dim) + " is out of range for a tensor of rank " +
                std::to_string(rank) + " (valid: " + std::to_string(-r) + " to " + std::to_string(r - 1) + ")");
  return dim < 0 ? dim + r : dim;
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.device() == b.device()) return;
  // Suggest moving the host tensor to the device: a model on a GPU fed a
  // batch the loader left on the host is the usual way this happens.
  const Device& target = a.device().is_cpu() ? b.device() : a.device();
  const std::string msg = std::string(op) + " got tensors on different devices: " + a.device().str() + " " +
                          shape_str(a.shape()) + " and " + b.device().str() + " " + shape_str(b.shape()) +
                          ". gdrt never moves data implicitly; move the " +
                          (a.device().is_cpu() || b.device().is_cpu() ? "host" : "other") + " one with .to(Device::parse(\"" +
                          target.str() + "\")) (or move the model/batch once, before the loop).";
  hooks::finding("GD001", msg);
  throw Error("GD001", msg);
}

void check_float(const char* op, const Tensor& t) {
  if (t.dtype() == DType::f32 || t.dtype() == DType::f64) return;
  if (t.dtype() == DType::f16)
    throw Error(std::string(op) + ": float16 is a storage type in gdrt; convert with .to(DType::f32) first (" +
                t.describe() + ")");
  throw Error(std::string(op) + " needs a floating-point tensor, got " + t.describe() +
              "; convert with .to(DType::f32)");
}

DType check_binary_dtypes(const char* op, const Tensor& a, const Tensor& b) {
  check_same_device(op, a, b);
  const DType x = a.dtype(), y = b.dtype();
  if (x == y) return x;
  const bool mix64 = (x == DType::f32 && y == DType::f64) || (x == DType::f64 && y == DType::f32);
  if (mix64) {
    if (float64_promotion_allowed()) return DType::f64;
    const Tensor& wide = x == DType::f64 ? a : b;
    const std::string msg = std::string(op) + " mixes float32 and float64: " + a.describe() + " and " + b.describe() +
                             ". A float64 tensor (" + shape_str(wide.shape()) +
                             ") has leaked into float32 math; on a GPU this runs at a fraction of float32 speed. "
                             "Fix: create it as float32 (from float host data, or with TensorOptions{}.with_dtype("
                             "DType::f32)) or convert it with .to(DType::f32); if float64 is intended, convert the "
                             "other operand with .to(DType::f64) or use a gdrt::AllowFloat64Promotion scope.";
    hooks::finding("GD002", msg);
    throw Error("GD002", msg);
  }
  throw Error(std::string(op) + ": dtypes " + std::string(dtype_name(x)) + " and " + std::string(dtype_name(y)) +
              " do not match (" + a.describe() + ", " + b.describe() +
              "); gdrt does not convert implicitly, use .to(DType::...) on one of them");
}

void check_shape(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string(op) + ": " + what);
}

}  // namespace gdrt
