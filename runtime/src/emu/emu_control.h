// Holding an emu stream still, for tests of ordering: whether work "has not
// run yet" cannot be decided by timing, but it can by a gate the stream
// waits at. Not part of the public API.
#pragma once

#include <future>
#include <memory>

#include "gdrt/backend.h"

namespace gdrt::emu {

// Work queued on `stream` of emu `device` after this is constructed runs
// only once release() is called (or the hold is destroyed).
class StreamHold {
 public:
  StreamHold(const Device& device, StreamId stream);
  ~StreamHold() { release(); }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void release();

 private:
  std::shared_ptr<std::promise<void>> gate_;
  bool released_ = false;
};

}  // namespace gdrt::emu
