// Recorded events (a .gdtrace's RawEvents) into a Trace: what the reader
// does with every events chunk, and a trace read in passes with each pass.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "gdtrace_format.h"
#include "gpudiag/trace.h"

namespace gpudiag::gdtrace {

// Trace ids of the file's string and stack ids.
struct FileIds {
  std::unordered_map<std::uint32_t, StringId> strings;
  std::unordered_map<std::uint32_t, StackId> stacks;
  StringId string(std::uint32_t id) const {
    auto it = strings.find(id);
    return it == strings.end() ? 0 : it->second;
  }
  StackId stack(std::uint32_t id) const {
    auto it = stacks.find(id);
    return it == stacks.end() ? 0 : it->second;
  }
};

// Adds a recorded event to its column of `trace` (a device or a stream to
// its descriptions). Its tid is its own, or its chunk's (EventRecords fills
// it in). A kind from a newer minor revision is skipped.
void add_event(Trace& trace, const FileIds& ids, const RawEvent& e);

// Devices and streams are descriptions, not events of a span of time.
inline bool is_description(const RawEvent& e) {
  return e.kind == static_cast<std::uint8_t>(EventKind::Device) || e.kind == static_cast<std::uint8_t>(EventKind::Stream);
}

}  // namespace gpudiag::gdtrace
