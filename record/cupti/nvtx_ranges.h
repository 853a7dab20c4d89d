// NVTX ranges from CUPTI's marker records (CUpti_ActivityMarker2): a range
// arrives as a start marker and, later, an end marker with the same id, and
// becomes one Range event (the program's own name for a span of its time,
// such as a training step). Push/pop and start/end ranges arrive alike.
// Instantaneous marks and ranges still open at the end are not ranges. Pure:
// no CUPTI calls, so it is tested with records built in the test.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "cupti_convert.h"

namespace gpudiag::cupti {

class MarkerRanges {
 public:
  // The range that `marker` ends, if it ends one whose start was seen.
  std::optional<rec::RangeEvent> add(const CUpti_ActivityMarker2& marker, const Hooks& hooks);
  std::size_t open() const { return open_.size(); }

 private:
  struct Start {
    std::uint64_t time_ns;
    rec::StringId name;
    std::uint32_t tid;
  };
  // A program that pushes without popping must not grow this for ever.
  static constexpr std::size_t kMaxOpen = 1u << 16;
  std::unordered_map<std::uint32_t, Start> open_;  // marker id -> its start
};

}  // namespace gpudiag::cupti
