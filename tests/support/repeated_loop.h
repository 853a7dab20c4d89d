// A long run made from a real recording: the recording as it is, then its
// training loop again and again after it, each copy later in time and with
// its own correlation ids, as a run recorded for longer would write it.
// For the report's tests and benchmarks of traces too big for memory.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "chunk_writing.h"
#include "event_codec.h"
#include "gdtrace_format.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::testing {

struct RepeatedLoop {
  std::uint64_t copies = 0;      // of the loop, after the recording
  std::uint64_t loop_events = 0;  // in each copy
  std::uint64_t bytes = 0;       // of the file written
};

// Writes `recording` to `path`, then copies of the events of its training
// loop (find_phases) until the file holds `target_bytes` or `max_copies`
// copies, and the End chunk of a clean stop. Throws TraceError when the
// recording has no loop or the file cannot be written.
inline RepeatedLoop write_repeated_loop(Trace recording, const std::string& path, std::uint64_t target_bytes,
                                        std::uint64_t max_copies = ~std::uint64_t{0}) {
  const RunPhases phases = find_phases(recording);
  if (!phases.has_loop()) throw TraceError(recording.path + ": no training loop to repeat");
  const std::uint64_t from = phases.steady().begin, to = phases.steady().end;
  std::vector<gdtrace::RawEvent> loop;
  std::uint64_t last_correlation = 0;
  recording.for_each_event_column([&](const auto& column) {
    using Event = typename std::decay_t<decltype(column)>::value_type;
    for (const Event& e : column) {
      if constexpr (requires { e.correlation; }) last_correlation = std::max(last_correlation, e.correlation);
      if constexpr (std::is_same_v<Event, HostAccess>)
        if (e.guarded_copy != 0) continue;  // a fault, not an event of the loop
      if (start_of(e) < from || start_of(e) >= to) continue;
      gdtrace::RawEvent raw = gdtrace::to_raw(gdtrace::encode(e));
      if constexpr (requires { e.tid; }) raw.tid = e.tid;
      loop.push_back(raw);
    }
  });
  std::stable_sort(loop.begin(), loop.end(), [](const auto& a, const auto& b) { return a.t0 < b.t0; });
  recording.stopped_cleanly = false;  // the End chunk follows the copies
  const std::uint64_t recorded_events = recording.event_count();
  const std::uint64_t after = recording.end_ns() + 1;
  write_gdtrace(recording, path);

  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw TraceError(path + ": cannot append to it");
  bool ok = true;
  constexpr std::size_t kChunkEvents = 4096;
  gdtrace::Deflater deflater(kChunkEvents);
  std::map<std::uint32_t, std::vector<gdtrace::RawEvent>> pending;  // by thread, as a recorder's buffers
  const auto flush = [&](std::uint32_t tid, std::vector<gdtrace::RawEvent>& events) {
    const std::string chunk = gdtrace::events_chunk(tid, events, deflater);
    ok = ok && gdtrace::write_all(fd, chunk.data(), chunk.size());
    events.clear();
  };
  RepeatedLoop out{.copies = 0, .loop_events = loop.size(), .bytes = 0};
  const std::uint64_t period = to - from;
  struct stat st {};
  while (ok && out.copies < max_copies && ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) < target_bytes) {
    const std::uint64_t shift = after - from + out.copies * period;
    const std::uint64_t correlations = (out.copies + 1) * (last_correlation + 1);
    for (gdtrace::RawEvent e : loop) {
      e.t0 += shift;
      e.t1 += shift;
      if (e.correlation != 0) e.correlation += correlations;
      auto& events = pending[e.tid];
      events.push_back(e);
      if (events.size() == kChunkEvents) flush(e.tid, events);
    }
    for (auto& [tid, events] : pending)
      if (!events.empty()) flush(tid, events);
    ++out.copies;
    // Every event before the next copy is written, as a writer pass's marker says.
    const std::string drained = gdtrace::chunk_bytes(gdtrace::ChunkType::Drained, gdtrace::words(from + shift + period));
    ok = ok && gdtrace::write_all(fd, drained.data(), drained.size());
  }
  const std::string end = gdtrace::chunk_bytes(gdtrace::ChunkType::End,
                                               gdtrace::words(recorded_events + out.copies * loop.size()));
  ok = ok && gdtrace::write_all(fd, end.data(), end.size());
  ok = ::fstat(fd, &st) == 0 && ok;
  ::close(fd);
  if (!ok) throw TraceError(path + ": write failed");
  out.bytes = static_cast<std::uint64_t>(st.st_size);
  return out;
}

}  // namespace gpudiag::testing
