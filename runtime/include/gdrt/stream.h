// Streams and events, as torch.cuda.Stream/Event: work queued on one stream
// runs in order; different streams run concurrently unless an event or the
// legacy default stream orders them. On cpu every call is immediate.
#pragma once

#include <memory>

#include "gdrt/backend.h"
#include "gdrt/device.h"

namespace gdrt {

// Work recorded on a stream up to a point; the backend's event is
// released with the last handle.
class Event {
 public:
  Event() = default;
  Device device() const { return device_; }
  EventId id() const { return id_; }
  bool defined() const { return owned_ != nullptr; }
  // Blocks the host until the work recorded before the event is done.
  void synchronize() const;

 private:
  friend class Stream;
  struct Owned;
  Event(Device device, EventId id);
  Device device_{};
  EventId id_ = 0;
  std::shared_ptr<Owned> owned_;
};

class Stream {
 public:
  // The device's default stream (the legacy default stream on emu and cuda).
  explicit Stream(Device device = {});
  // A new stream, destroyed with its last handle (queued work still runs).
  static Stream create(Device device, StreamFlags flags = StreamFlags::blocking);
  // The stream ops on `device` are queued on by this thread.
  static Stream current(Device device);

  Device device() const { return device_; }
  StreamId id() const { return id_; }
  Event record() const;
  // Later work on this stream waits for `event` (the host does not).
  void wait(const Event& event) const;
  void synchronize() const;
  friend bool operator==(const Stream& a, const Stream& b) { return a.device_ == b.device_ && a.id_ == b.id_; }

 private:
  struct Owned;
  Device device_{};
  StreamId id_ = 0;
  std::shared_ptr<Owned> owned_;
};

// Makes `stream` the current stream of its device on this thread for the
// scope's lifetime, as `with torch.cuda.stream(s):`.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// Waits for all work queued on `device`, on every stream.
void synchronize(Device device);

}  // namespace gdrt
