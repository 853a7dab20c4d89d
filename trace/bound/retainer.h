// What a bounded trace keeps of the events it drops (--max-size): the
// oldest segment of events is dropped whole, and these of its events are
// written to the keep file first, so that the report still sees, for the
// whole run:
// - every allocation still live (or freed only after the segment), with its
//   stack, and the free of any allocation kept earlier;
// - at an out-of-memory, every allocation live at that moment;
// - every error (a failed call, up to kErrorsPerSite per call site and
//   status, and the thread's next call, which may be its check), every
//   out-of-memory and every finding a runtime raised;
// - the first occurrence of each distinct kind of event at each call site
//   (kind, enums, device, stack, name or parameter);
// - the descriptions of devices and streams.
// It is pure: the recorder's writer thread and the offline bounder (tests,
// `write_gdtrace` with a size bound) feed it the same way.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gdtrace_format.h"

namespace gpudiag::gdtrace {

class Retainer {
 public:
  static constexpr std::uint32_t kErrorsPerSite = 16;
  // Distinct first occurrences remembered; past it, no more are kept (the
  // memory of a recorder must not grow with the run).
  static constexpr std::size_t kMaxFirstOccurrences = 1 << 16;

  // The events of the oldest segment, each with its thread in `tid`, in
  // time order; returns those to keep, in the same order.
  std::vector<RawEvent> keep_from(std::span<const RawEvent> events);

  // Allocations kept so far whose free has not been seen (for tests).
  std::size_t kept_live_allocations() const { return kept_allocations_.size(); }

  struct Key {
    std::uint8_t kind, a, b, c;
    std::int32_t device;
    std::uint32_t stack, x;
    std::uint64_t extra;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
  };

 private:
  bool first_occurrence(const RawEvent& e);
  bool error_worth_keeping(const RawEvent& e);

  // Allocations of a kept segment, by address, whose free has not been seen.
  std::unordered_set<Key, KeyHash> kept_allocations_;
  std::unordered_set<Key, KeyHash> seen_;
  std::unordered_map<Key, std::uint32_t, KeyHash> errors_;
};

}  // namespace gpudiag::gdtrace
