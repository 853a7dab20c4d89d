// The computable dtypes, one switch for the cpu and the cuda kernels alike:
// runs the statements with T bound to the element type (u8 and bool share
// uint8_t). f16 is storage-only and refused (the ops layer converts first);
// `backend`, a string literal, names the kernels in that error.
#pragma once

#include <cstdint>

#include "gdrt/dtype.h"
#include "gdrt/error.h"

#define GDRT_DTYPE_DISPATCH(backend, dtype, T, ...)                                                      \
  switch (dtype) {                                                                                       \
    case ::gdrt::DType::f32: { using T = float; __VA_ARGS__; break; }                                    \
    case ::gdrt::DType::f64: { using T = double; __VA_ARGS__; break; }                                   \
    case ::gdrt::DType::i32: { using T = std::int32_t; __VA_ARGS__; break; }                             \
    case ::gdrt::DType::i64: { using T = std::int64_t; __VA_ARGS__; break; }                             \
    case ::gdrt::DType::u8: case ::gdrt::DType::boolean: { using T = std::uint8_t; __VA_ARGS__; break; } \
    case ::gdrt::DType::f16:                                                                             \
      throw ::gdrt::Error(backend " kernel: float16 is storage-only; convert to float32 first");         \
  }
