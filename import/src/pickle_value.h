// A value a Python pickle holds, as the data-only pickle reader builds it:
// scalars in place, strings and containers by their index in the reader.
#pragma once

#include <cstdint>

namespace gpudiag::import::pickle {

struct Value {
  enum class Kind : std::uint8_t { None, Bool, Int, Float, String, Bytes, List, Tuple, Set, Dict, Released };
  Kind kind = Kind::None;
  bool unsigned_int = false;  // an Int of 2^63 or more, held in u
  union {
    std::int64_t i = 0;
    std::uint64_t u;
    double f;
    std::uint32_t index;  // of a string (strings()), or of a container (items())
  };
  bool is_container() const { return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Set || kind == Kind::Dict; }
};

}  // namespace gpudiag::import::pickle
