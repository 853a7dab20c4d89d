// A .gdtrace read once without keeping its events: its definitions (names,
// stacks, modules, devices, streams, crashes, guarded faults), what it says
// of its own completeness, and where each chunk of events lies with the
// span of time it covers. Reading the trace in passes (gdtrace_passes.h)
// loads the events of one span of time after another from it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gdtrace_format.h"
#include "gpudiag/trace.h"
#include "raw_events.h"

namespace gpudiag::gdtrace {

struct EventsChunk {
  std::uint32_t file = 0;          // index into GdtraceIndex::files
  std::uint64_t payload_at = 0;    // byte offset of its payload
  std::uint32_t length = 0, crc = 0;
  ChunkType type = ChunkType::Events;  // or DeflatedEvents
  std::uint32_t count = 0;         // its events, descriptions not counted
  std::uint64_t first_ns = 0, last_ns = 0;  // the earliest and latest start among them
};

struct GdtraceIndex {
  // Every field of the trace but its events: read_gdtrace's result with its columns empty.
  Trace definitions;
  FileIds ids;
  std::vector<std::string> files;  // the trace file, then the segment files read
  std::vector<EventsChunk> chunks;  // in the order they were read
  // What a bounded trace kept of the segments it dropped, each with its thread.
  std::vector<RawEvent> retained;
  std::uint64_t events = 0;  // in chunks and retained
  std::array<std::uint64_t, 256> events_of_kind{};  // by EventKind
};

// Throws TraceError as read_gdtrace does.
GdtraceIndex index_gdtrace(const std::string& path);

}  // namespace gpudiag::gdtrace
