// Element types of gdrt tensors. f16 is a storage type: it converts to and
// from f32/f64 but arithmetic on it is refused (convert first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gdrt {

enum class DType : std::uint8_t { f32, f64, f16, i32, i64, u8, boolean };

std::size_t itemsize(DType dtype);
// "float32", "float64", "float16", "int32", "int64", "uint8", "bool" (PyTorch's names).
std::string_view dtype_name(DType dtype);
// Safetensors names: "F32", "F64", "F16", "I32", "I64", "U8", "BOOL".
std::string_view safetensors_name(DType dtype);
// Inverse of safetensors_name; throws gdrt::Error for an unknown name.
DType dtype_from_safetensors(std::string_view name);
bool is_floating(DType dtype);

// IEEE half <-> float conversions used by f16 storage.
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);

}  // namespace gdrt
