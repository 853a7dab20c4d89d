// record(...) for each event kind: encode one fixed-size RawEvent in the
// calling thread's buffer (see gdtrace_format.h for the field use).
//
// The common case (the caller gave the time, the buffer has room) makes no
// call at all, so it needs no stack frame; taking a timestamp or a new
// buffer half is left to an out-of-line slow path.
#include <cstring>

#include "recorder_state.h"

namespace gpudiag::rec {
namespace {

using gdtrace::RawEvent;

inline std::uint8_t u8(auto v) noexcept { return static_cast<std::uint8_t>(v); }
inline std::uint64_t end_or_start(std::uint64_t end, std::uint64_t start) noexcept { return end != 0 ? end : start; }

// Allocations and frees carry the same fields and share one encoding.
template <class Event>
void encode_memory(RawEvent& e, const Event& v) noexcept {
  e.a = u8(v.kind);
  e.device = v.device;
  e.t0 = e.t1 = v.time_ns;
  e.stream = v.stream;
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.p[0] = v.addr;
  e.p[1] = v.bytes;
}

void encode(RawEvent& e, const AllocEvent& v) noexcept {
  e.kind = u8(EventKind::Alloc);
  encode_memory(e, v);
}

void encode(RawEvent& e, const FreeEvent& v) noexcept {
  e.kind = u8(EventKind::Free);
  encode_memory(e, v);
}

void encode(RawEvent& e, const MemcpyEvent& v) noexcept {
  e.kind = u8(EventKind::Memcpy);
  e.a = u8(v.copy != CopyKind::Unknown ? v.copy : copy_kind_of(v.src_kind, v.dst_kind));
  e.b = u8(v.src_kind);
  e.c = u8(v.dst_kind);
  e.flags = v.async ? gdtrace::kFlagAsync : 0;
  e.device = v.device;
  e.t0 = v.start_ns;
  e.t1 = end_or_start(v.end_ns, v.start_ns);
  e.stream = v.stream;
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.x = static_cast<std::uint32_t>(v.peer_device);
  e.p[0] = v.dst;
  e.p[1] = v.src;
  e.p[2] = v.bytes;
}

void encode(RawEvent& e, const MemsetEvent& v) noexcept {
  e.kind = u8(EventKind::Memset);
  e.a = u8(v.kind);
  e.flags = v.async ? gdtrace::kFlagAsync : 0;
  e.device = v.device;
  e.t0 = v.start_ns;
  e.t1 = end_or_start(v.end_ns, v.start_ns);
  e.stream = v.stream;
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.x = v.value;
  e.p[0] = v.addr;
  e.p[1] = v.bytes;
}

void encode(RawEvent& e, const KernelEvent& v) noexcept {
  e.kind = u8(EventKind::Kernel);
  e.device = v.device;
  e.t0 = v.start_ns;
  e.t1 = end_or_start(v.end_ns, v.start_ns);
  e.stream = v.stream;
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.x = v.name;
  const std::uint32_t dims[8] = {v.grid[0], v.grid[1], v.grid[2], v.block[0], v.block[1], v.block[2], v.shared_bytes, 0};
  std::memcpy(e.p, dims, sizeof dims);
}

void encode(RawEvent& e, const SyncEvent& v) noexcept {
  e.kind = u8(EventKind::Sync);
  e.a = u8(v.kind);
  e.device = v.device;
  e.t0 = v.start_ns;
  e.t1 = end_or_start(v.end_ns, v.start_ns);
  e.stream = v.stream;
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.p[0] = v.event;
}

void encode(RawEvent& e, const ApiEvent& v) noexcept {
  e.kind = u8(EventKind::Api);
  e.a = u8(v.domain);
  e.device = v.device;
  e.t0 = v.start_ns;
  e.t1 = end_or_start(v.end_ns, v.start_ns);
  e.correlation = v.correlation;
  e.stack = v.stack;
  e.x = v.name;
  e.p[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(v.status));
}

void encode(RawEvent& e, const HostAccessEvent& v) noexcept {
  e.kind = u8(EventKind::HostAccess);
  e.a = u8(v.access);
  e.device = v.device;
  e.t0 = e.t1 = v.time_ns;
  e.stack = v.stack;
  e.p[0] = v.addr;
  e.p[1] = v.bytes;
}

void encode(RawEvent& e, const OutOfMemoryEvent& v) noexcept {
  e.kind = u8(EventKind::OutOfMemory);
  e.device = v.device;
  e.t0 = e.t1 = v.time_ns;
  e.stack = v.stack;
  e.p[0] = v.requested_bytes;
  e.p[1] = v.free_bytes;
  e.p[2] = v.capacity_bytes;
}

void encode(RawEvent& e, const FindingEvent& v) noexcept {
  e.kind = u8(EventKind::Finding);
  e.device = kHostDevice;
  e.t0 = e.t1 = v.time_ns;
  e.stack = v.stack;
  e.x = v.rule_id;
  e.p[0] = v.message;
}

// Device and stream descriptions carry no time of their own: stamped now.
void encode(RawEvent& e, const DeviceInfo& v) noexcept {
  e.kind = u8(EventKind::Device);
  e.device = v.device;
  e.t0 = e.t1 = now_ns();
  e.x = v.name;
  e.p[0] = v.memory_bytes;
}

void encode(RawEvent& e, const StreamInfo& v) noexcept {
  e.kind = u8(EventKind::Stream);
  e.device = v.device;
  e.t0 = e.t1 = now_ns();
  e.stream = v.stream;
  e.x = v.name;
}

// The event's time, where 0 means "now"; Device/StreamInfo have none.
template <class Event>
constexpr bool kHasTime = requires(Event v) { v.time_ns; } || requires(Event v) { v.start_ns; };

template <class Event>
auto& time_of(Event& v) noexcept {
  if constexpr (requires { v.time_ns; })
    return v.time_ns;
  else
    return v.start_ns;
}

// Built in registers and stored once: no rep-stos memset on the slot.
template <class Event>
inline void store(RawEvent& slot, const Event& v) noexcept {
  RawEvent e{};
  encode(e, v);
  slot = e;
}

template <class Event>
[[gnu::noinline]] void record_slow(const Event& given) noexcept {
  if (detail::g_recorder.load(std::memory_order_acquire) == nullptr) return;  // not recording: no clock read
  Event v = given;
  if constexpr (kHasTime<Event>) {
    if (time_of(v) == 0) time_of(v) = now_ns();
  }
  detail::Cursor& c = detail::t_cursor;
  RawEvent* slot = detail::begin_event(c);
  if (slot == nullptr) return;
  store(*slot, v);
  detail::commit_event(c);
}

template <class Event>
inline void put(const Event& v) noexcept {
  if constexpr (kHasTime<Event>) {
    detail::Cursor& c = detail::t_cursor;
    if (time_of(v) != 0 && detail::has_room(c)) [[likely]] {
      store(c.events[c.n], v);
      detail::commit_event(c);
      return;
    }
  }
  record_slow(v);
}

}  // namespace

void record(const AllocEvent& v) noexcept { put(v); }
void record(const FreeEvent& v) noexcept { put(v); }
void record(const MemcpyEvent& v) noexcept { put(v); }
void record(const MemsetEvent& v) noexcept { put(v); }
void record(const KernelEvent& v) noexcept { put(v); }
void record(const SyncEvent& v) noexcept { put(v); }
void record(const ApiEvent& v) noexcept { put(v); }
void record(const HostAccessEvent& v) noexcept { put(v); }
void record(const OutOfMemoryEvent& v) noexcept { put(v); }
void record(const FindingEvent& v) noexcept { put(v); }
void record(const DeviceInfo& v) noexcept { put(v); }
void record(const StreamInfo& v) noexcept { put(v); }

}  // namespace gpudiag::rec
