// Streams, events and the current stream of each device per thread; host
// waits and copies go through here so each is recorded in one place.
#include "gdrt/stream.h"

#include <vector>

#include "core/hooks.h"
#include "core/impl.h"

namespace gdrt {

struct Stream::Owned {
  Owned(Device d, StreamId s) : device(d), id(s) {}
  ~Owned() {
    try {
      backend(device).destroy_stream(id);
    } catch (const Error&) {
      // A device that failed (a sticky error) cannot destroy it; the error was reported where it happened.
    }
  }
  Device device;
  StreamId id;
};

struct Event::Owned {
  Owned(Device d, EventId e) : device(d), id(e) {}
  ~Owned() {
    try {
      backend(device).destroy_event(id);
    } catch (const Error&) {
      // A device that failed (a sticky error) keeps its events: nothing to release.
    }
  }
  Device device;
  EventId id;
};

Event::Event(Device device, EventId id) : device_(device), id_(id), owned_(std::make_shared<Owned>(device, id)) {}

namespace {
thread_local std::vector<Stream> t_current;  // at most one per device
}  // namespace

Stream::Stream(Device device) : device_(device) {}

Stream Stream::create(Device device, StreamFlags flags) {
  Stream s(device);
  s.id_ = backend(device).create_stream(flags);
  s.owned_ = std::make_shared<Owned>(device, s.id_);
  return s;
}

Stream Stream::current(Device device) {
  for (const Stream& s : t_current)
    if (s.device_ == device) return s;
  return Stream(device);
}

Event Stream::record() const { return Event(device_, backend(device_).record_event(id_)); }

void Stream::wait(const Event& event) const {
  if (!event.defined()) throw Error("Stream::wait: the event was never recorded (a default-constructed Event)");
  if (!(event.device() == device_))
    throw Error("a stream on " + device_.str() + " cannot wait for an event recorded on " + event.device().str());
  const auto start = hooks::now_ns();
  backend(device_).wait_event(id_, event.id());
  hooks::synchronized(device_, hooks::SyncScope::event, id_, start, start);
}

void Stream::synchronize() const { wait_for(device_, id_); }

void Event::synchronize() const {
  if (!defined()) throw Error("Event::synchronize: the event was never recorded (a default-constructed Event)");
  const auto start = hooks::now_ns();
  backend(device_).synchronize_event(id_);
  hooks::synchronized(device_, hooks::SyncScope::event, 0, start, hooks::now_ns());
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(Stream::current(stream.device())) {
  for (Stream& s : t_current)
    if (s.device() == stream.device()) {
      s = stream;
      return;
    }
  t_current.push_back(stream);
}

StreamGuard::~StreamGuard() {
  for (Stream& s : t_current)
    if (s.device() == previous_.device()) s = previous_;
}

void synchronize(Device device) {
  const auto start = hooks::now_ns();
  backend(device).synchronize_device();
  hooks::synchronized(device, hooks::SyncScope::device, 0, start, hooks::now_ns());
}

void wait_for(const Device& device, StreamId stream) {
  const auto start = hooks::now_ns();
  backend(device).synchronize(stream);
  hooks::synchronized(device, hooks::SyncScope::stream, stream, start, hooks::now_ns());
}

void copy_bytes(const Device& via, void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
                std::size_t bytes, StreamId stream, bool async) {
  if (bytes == 0) return;
  backend(via).copy(dst, dst_kind, src, src_kind, bytes, stream, hooks::copy_queued(via, async));
}

void launch(const Device& device, KernelOp op) {
  const StreamId stream = Stream::current(device).id();
  // The host's own kernels take host memory by design: their arguments say
  // nothing the detectors read, so only device launches record them.
  const std::uint64_t launch_id = device.is_cpu() ? 0 : hooks::launched(device, op, stream);
  backend(device).launch(op, stream, launch_id);
}

}  // namespace gdrt
