// record(...) for each event kind: fill one fixed-size RawEvent in the
// calling thread's buffer (see gdtrace_format.h for the field use).
#include <cstring>

#include "recorder_state.h"

namespace gpudiag::rec {
namespace {

using detail::Buffer;
using gdtrace::RawEvent;

template <class Fill>
inline void put(EventKind kind, Fill&& fill) noexcept {
  if (!enabled()) return;
  Buffer* b = nullptr;
  RawEvent* e = detail::begin_event(b);
  if (e == nullptr) return;
  // Built in registers/stack and stored once: no rep-stos memset on the slot.
  RawEvent v{};
  v.kind = static_cast<std::uint8_t>(kind);
  fill(v);
  *e = v;
  detail::commit_event(b);
}

inline std::uint64_t or_now(std::uint64_t t) noexcept { return t != 0 ? t : now_ns(); }
inline std::uint8_t u8(auto v) noexcept { return static_cast<std::uint8_t>(v); }

}  // namespace

namespace {
// Allocations and frees carry the same fields and share one encoding.
template <class Event>
void put_memory_event(EventKind kind, const Event& v) noexcept {
  put(kind, [&](RawEvent& e) {
    e.a = u8(v.kind);
    e.device = v.device;
    e.t0 = e.t1 = or_now(v.time_ns);
    e.stream = v.stream;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.p[0] = v.addr;
    e.p[1] = v.bytes;
  });
}
}  // namespace

void record(const AllocEvent& v) noexcept { put_memory_event(EventKind::Alloc, v); }

void record(const FreeEvent& v) noexcept { put_memory_event(EventKind::Free, v); }

void record(const MemcpyEvent& v) noexcept {
  put(EventKind::Memcpy, [&](RawEvent& e) {
    e.a = u8(v.copy != CopyKind::Unknown ? v.copy : copy_kind_of(v.src_kind, v.dst_kind));
    e.b = u8(v.src_kind);
    e.c = u8(v.dst_kind);
    e.flags = v.async ? gdtrace::kFlagAsync : 0;
    e.device = v.device;
    e.t0 = or_now(v.start_ns);
    e.t1 = v.end_ns != 0 ? v.end_ns : e.t0;
    e.stream = v.stream;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.x = static_cast<std::uint32_t>(v.peer_device);
    e.p[0] = v.dst;
    e.p[1] = v.src;
    e.p[2] = v.bytes;
  });
}

void record(const MemsetEvent& v) noexcept {
  put(EventKind::Memset, [&](RawEvent& e) {
    e.a = u8(v.kind);
    e.flags = v.async ? gdtrace::kFlagAsync : 0;
    e.device = v.device;
    e.t0 = or_now(v.start_ns);
    e.t1 = v.end_ns != 0 ? v.end_ns : e.t0;
    e.stream = v.stream;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.x = v.value;
    e.p[0] = v.addr;
    e.p[1] = v.bytes;
  });
}

void record(const KernelEvent& v) noexcept {
  put(EventKind::Kernel, [&](RawEvent& e) {
    e.device = v.device;
    e.t0 = or_now(v.start_ns);
    e.t1 = v.end_ns != 0 ? v.end_ns : e.t0;
    e.stream = v.stream;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.x = v.name;
    const std::uint32_t dims[8] = {v.grid[0], v.grid[1], v.grid[2], v.block[0], v.block[1], v.block[2], v.shared_bytes, 0};
    std::memcpy(e.p, dims, sizeof dims);
  });
}

void record(const SyncEvent& v) noexcept {
  put(EventKind::Sync, [&](RawEvent& e) {
    e.a = u8(v.kind);
    e.device = v.device;
    e.t0 = or_now(v.start_ns);
    e.t1 = v.end_ns != 0 ? v.end_ns : e.t0;
    e.stream = v.stream;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.p[0] = v.event;
  });
}

void record(const ApiEvent& v) noexcept {
  put(EventKind::Api, [&](RawEvent& e) {
    e.a = u8(v.domain);
    e.device = v.device;
    e.t0 = or_now(v.start_ns);
    e.t1 = v.end_ns != 0 ? v.end_ns : e.t0;
    e.correlation = v.correlation;
    e.stack = v.stack;
    e.x = v.name;
    e.p[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(v.status));
  });
}

void record(const HostAccessEvent& v) noexcept {
  put(EventKind::HostAccess, [&](RawEvent& e) {
    e.a = u8(v.access);
    e.device = v.device;
    e.t0 = e.t1 = or_now(v.time_ns);
    e.stack = v.stack;
    e.p[0] = v.addr;
    e.p[1] = v.bytes;
  });
}

void record(const OutOfMemoryEvent& v) noexcept {
  put(EventKind::OutOfMemory, [&](RawEvent& e) {
    e.device = v.device;
    e.t0 = e.t1 = or_now(v.time_ns);
    e.stack = v.stack;
    e.p[0] = v.requested_bytes;
    e.p[1] = v.free_bytes;
    e.p[2] = v.capacity_bytes;
  });
}

void record(const FindingEvent& v) noexcept {
  put(EventKind::Finding, [&](RawEvent& e) {
    e.device = kHostDevice;
    e.t0 = e.t1 = or_now(v.time_ns);
    e.stack = v.stack;
    e.x = v.rule_id;
    e.p[0] = v.message;
  });
}

void record(const DeviceInfo& v) noexcept {
  put(EventKind::Device, [&](RawEvent& e) {
    e.device = v.device;
    e.t0 = e.t1 = now_ns();
    e.x = v.name;
    e.p[0] = v.memory_bytes;
  });
}

void record(const StreamInfo& v) noexcept {
  put(EventKind::Stream, [&](RawEvent& e) {
    e.device = v.device;
    e.t0 = e.t1 = now_ns();
    e.stream = v.stream;
    e.x = v.name;
  });
}

}  // namespace gpudiag::rec
