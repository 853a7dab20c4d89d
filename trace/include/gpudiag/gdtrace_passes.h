// A .gdtrace too big to hold in memory, read in passes: each pass is one
// span of the run's time with every event in it, and, of the spans before
// it, what a bounded trace keeps of the segments it drops (live
// allocations with their stacks, errors, out-of-memory, the first
// occurrence of each kind of event at each call site). Memory stays that
// of one pass however long the run was.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpudiag/trace.h"

namespace gpudiag {

class GdtracePasses {
 public:
  // Reads the trace once, keeping only its definitions and where its
  // events lie, and plans passes of about `events_per_pass` events each.
  // Throws TraceError as read_gdtrace does.
  GdtracePasses(const std::string& path, std::uint64_t events_per_pass);
  ~GdtracePasses();
  GdtracePasses(const GdtracePasses&) = delete;
  GdtracePasses& operator=(const GdtracePasses&) = delete;

  // The whole trace's names, stacks, modules, devices, streams, crashes
  // and guarded faults, and what it says of its completeness, without
  // events: symbolize() it once, before the first pass, and every pass has
  // its symbols.
  Trace& definitions();
  std::uint64_t event_count() const;
  // Events of one kind in the whole trace.
  std::uint64_t events_of_kind(EventKind kind) const;
  std::size_t pass_count() const;
  // The next pass, or false after the last. A pass's trace:
  // - has every event that starts in its span, and what was kept of the
  //   spans before it, whose end is its detail_from_ns (bounded() holds);
  // - of a pass before the last, is complete only up to the end of its
  //   span (complete_until_ns), since the run goes on after it.
  // Throws TraceError when a file changed since the trace was first read.
  bool next(Trace& pass);
  // Where the last pass returned begins.
  std::uint64_t pass_begin_ns() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpudiag
