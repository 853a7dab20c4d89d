#include "gdrt/dtype.h"

#include <string>

#include "gdrt/error.h"
#include "ops/scalar_convert.h"

namespace gdrt {

std::size_t itemsize(DType dtype) {
  switch (dtype) {
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
    case DType::f16: return 2;
    case DType::u8: case DType::boolean: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string_view safetensors_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::f16: return "F16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

DType dtype_from_safetensors(std::string_view name) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean})
    if (safetensors_name(d) == name) return d;
  throw Error("unsupported safetensors dtype \"" + std::string(name) +
              "\" (gdrt reads F32, F64, F16, I32, I64, U8, BOOL)");
}

bool is_floating(DType dtype) { return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16; }

std::uint16_t float_to_half(float value) { return scalar::float_to_half_bits(value); }

float half_to_float(std::uint16_t bits) { return scalar::half_bits_to_float(bits); }

}  // namespace gdrt
