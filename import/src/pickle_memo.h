// A pickle's memo, where the pickler stores what it refers to again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "pickle_value.h"

namespace gpudiag::import::pickle {

// The memo: by key, dense as pickle.dump writes it (MEMOIZE numbers
// every object it stores), sparse for keys far past the others.
class Memo {
 public:
  std::size_t size() const { return count_; }
  void put(std::uint64_t key, const Value& v);
  const Value* get(std::uint64_t key) const;
  void release(std::uint64_t key);

 private:
  static constexpr std::uint64_t kDenseGap = 4096;
  std::vector<Value> dense_;
  std::vector<bool> stored_;
  std::unordered_map<std::uint64_t, Value> sparse_;
  std::size_t count_ = 0;
};

}  // namespace gpudiag::import::pickle
