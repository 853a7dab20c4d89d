// Element conversions every backend performs alike: float <-> IEEE half
// (f16 storage), double to the integer dtypes, and one element of any dtype
// read or written as a double (what fill, copy and random go through).
#pragma once

#include <cstdint>
#include <cstring>

#include "gdrt/dtype.h"
#include "ops/host_device.h"

namespace gdrt::scalar {

GDRT_HOST_DEVICE inline std::uint32_t float_bits(float value) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

GDRT_HOST_DEVICE inline float float_from_bits(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// Round to nearest even; every NaN becomes the quiet NaN 0x7e00, with its sign.
GDRT_HOST_DEVICE inline std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t x = float_bits(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf/nan
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {  // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rest = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // round to nearest even
  return static_cast<std::uint16_t>(half);
}

GDRT_HOST_DEVICE inline float half_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  const std::uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1.0p-24f;  // exact: mant < 2^10
    return sign ? -v : v;
  }
  if (exp == 0x1f) return float_from_bits(sign | 0x7f800000u | (mant << 13));
  return float_from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// Double to an integer as x86-64 truncates it (cvttsd2si): out-of-range
// values and NaN give the minimum, where a plain cast is undefined. u8 takes
// the low byte of the int32 result, as the compiler's cast does there.
GDRT_HOST_DEVICE inline std::int64_t truncate_to_i64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}
GDRT_HOST_DEVICE inline std::int32_t truncate_to_i32(double v) {
  if (!(v >= -2147483648.0 && v < 2147483648.0)) return INT32_MIN;
  return static_cast<std::int32_t>(v);
}

GDRT_HOST_DEVICE inline void store_double(void* base, DType dtype, std::int64_t i, double v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(base)[i] = v; break;
    case DType::f16: static_cast<std::uint16_t*>(base)[i] = float_to_half_bits(static_cast<float>(v)); break;
    case DType::i32: static_cast<std::int32_t*>(base)[i] = truncate_to_i32(v); break;
    case DType::i64: static_cast<std::int64_t*>(base)[i] = truncate_to_i64(v); break;
    case DType::u8: static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(truncate_to_i32(v)); break;
    case DType::boolean: static_cast<std::uint8_t*>(base)[i] = v != 0.0 ? 1 : 0; break;
  }
}

GDRT_HOST_DEVICE inline double load_double(const void* base, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f16: return half_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::i32: return static_cast<const std::int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
    case DType::u8: return static_cast<const std::uint8_t*>(base)[i];
    case DType::boolean: return static_cast<const std::uint8_t*>(base)[i] ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace gdrt::scalar
