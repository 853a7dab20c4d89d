// record(...) for each event kind: encode one fixed-size RawEvent in the
// calling thread's buffer (see gdtrace_format.h for the field use).
//
// The common case (the caller gave the time, the buffer has room) makes no
// call at all, so it needs no stack frame; taking a timestamp or a new
// buffer half is left to an out-of-line slow path.
#include <bit>
#include <cstddef>
#include <cstring>

#include "recorder_state.h"

namespace gpudiag::rec {
namespace {

using gdtrace::RawEvent;

// An event as the eleven 8-byte words of its RawEvent, stored a word at a
// time: 11 stores instead of ~18 for the byte, 16- and 32-bit fields, which
// bench/trace measured as a third of an event's cost. Field order and sizes:
// gdtrace_format.h (little-endian, as the format is).
struct Words {
  std::uint64_t head = 0;  // kind, a, b, c, device
  std::uint64_t t0 = 0, t1 = 0, stream = 0, correlation = 0;
  std::uint64_t stack_x = 0;  // stack, x
  std::uint64_t flags = 0;    // flags, reserved0 (0), tid
  std::uint64_t p[4] = {};
};
static_assert(std::endian::native == std::endian::little);
// The words that pack several fields: kind, a, b, c then device; stack then
// x; flags, reserved0 then tid.
static_assert(offsetof(RawEvent, kind) == 0 && offsetof(RawEvent, device) == 4 && offsetof(RawEvent, t0) == 8 &&
              offsetof(RawEvent, x) == offsetof(RawEvent, stack) + 4 && offsetof(RawEvent, tid) == offsetof(RawEvent, flags) + 4 &&
              offsetof(RawEvent, p) == offsetof(RawEvent, flags) + 8);

inline std::uint64_t u8(auto v) noexcept { return static_cast<std::uint8_t>(v); }
inline std::uint64_t pair(std::uint32_t low, std::uint32_t high) noexcept { return low | std::uint64_t{high} << 32; }
inline std::uint64_t head(EventKind kind, std::int32_t device, std::uint64_t a = 0, std::uint64_t b = 0,
                          std::uint64_t c = 0) noexcept {
  return u8(kind) | a << 8 | b << 16 | c << 24 | std::uint64_t{static_cast<std::uint32_t>(device)} << 32;
}
inline std::uint64_t end_or_start(std::uint64_t end, std::uint64_t start) noexcept { return end != 0 ? end : start; }

// Allocations and frees carry the same fields and share one encoding.
template <class Event>
Words encode_memory(EventKind kind, const Event& v) noexcept {
  return {.head = head(kind, v.device, u8(v.kind)),
          .t0 = v.time_ns,
          .t1 = v.time_ns,
          .stream = v.stream,
          .correlation = v.correlation,
          .stack_x = v.stack,
          .p = {v.addr, v.bytes}};
}

Words encode(const AllocEvent& v) noexcept { return encode_memory(EventKind::Alloc, v); }

Words encode(const FreeEvent& v) noexcept { return encode_memory(EventKind::Free, v); }

Words encode(const MemcpyEvent& v) noexcept {
  const CopyKind copy = v.copy != CopyKind::Unknown ? v.copy : copy_kind_of(v.src_kind, v.dst_kind);
  return {.head = head(EventKind::Memcpy, v.device, u8(copy), u8(v.src_kind), u8(v.dst_kind)),
          .t0 = v.start_ns,
          .t1 = end_or_start(v.end_ns, v.start_ns),
          .stream = v.stream,
          .correlation = v.correlation,
          .stack_x = pair(v.stack, static_cast<std::uint32_t>(v.peer_device)),
          .flags = v.async ? gdtrace::kFlagAsync : 0u,
          .p = {v.dst, v.src, v.bytes}};
}

Words encode(const MemsetEvent& v) noexcept {
  return {.head = head(EventKind::Memset, v.device, u8(v.kind)),
          .t0 = v.start_ns,
          .t1 = end_or_start(v.end_ns, v.start_ns),
          .stream = v.stream,
          .correlation = v.correlation,
          .stack_x = pair(v.stack, v.value),
          .flags = v.async ? gdtrace::kFlagAsync : 0u,
          .p = {v.addr, v.bytes}};
}

Words encode(const KernelEvent& v) noexcept {
  return {.head = head(EventKind::Kernel, v.device),
          .t0 = v.start_ns,
          .t1 = end_or_start(v.end_ns, v.start_ns),
          .stream = v.stream,
          .correlation = v.correlation,
          .stack_x = pair(v.stack, v.name),
          .p = {pair(v.grid[0], v.grid[1]), pair(v.grid[2], v.block[0]), pair(v.block[1], v.block[2]), v.shared_bytes}};
}

Words encode(const SyncEvent& v) noexcept {
  return {.head = head(EventKind::Sync, v.device, u8(v.kind)),
          .t0 = v.start_ns,
          .t1 = end_or_start(v.end_ns, v.start_ns),
          .stream = v.stream,
          .correlation = v.correlation,
          .stack_x = v.stack,
          .p = {v.event}};
}

Words encode(const ApiEvent& v) noexcept {
  return {.head = head(EventKind::Api, v.device, u8(v.domain)),
          .t0 = v.start_ns,
          .t1 = end_or_start(v.end_ns, v.start_ns),
          .correlation = v.correlation,
          .stack_x = pair(v.stack, v.name),
          .flags = pair(0, v.tid),
          .p = {static_cast<std::uint64_t>(static_cast<std::int64_t>(v.status)), v.symbol}};
}

Words encode(const HostAccessEvent& v) noexcept {
  return {.head = head(EventKind::HostAccess, v.device, u8(v.access)),
          .t0 = v.time_ns,
          .t1 = v.time_ns,
          .stack_x = v.stack,
          .p = {v.addr, v.bytes}};
}

Words encode(const OutOfMemoryEvent& v) noexcept {
  return {.head = head(EventKind::OutOfMemory, v.device),
          .t0 = v.time_ns,
          .t1 = v.time_ns,
          .stack_x = v.stack,
          .p = {v.requested_bytes, v.free_bytes, v.capacity_bytes}};
}

Words encode(const FindingEvent& v) noexcept {
  return {.head = head(EventKind::Finding, kHostDevice),
          .t0 = v.time_ns,
          .t1 = v.time_ns,
          .stack_x = pair(v.stack, v.rule_id),
          .p = {v.message}};
}

Words encode(const RangeEvent& v) noexcept {
  return {.head = head(EventKind::Range, kHostDevice), .t0 = v.start_ns, .t1 = end_or_start(v.end_ns, v.start_ns),
          .stack_x = pair(0, v.name)};
}

// Device and stream descriptions carry no time of their own: stamped now.
Words encode(const DeviceInfo& v) noexcept {
  const std::uint64_t now = now_ns();
  return {.head = head(EventKind::Device, v.device), .t0 = now, .t1 = now, .stack_x = pair(0, v.name), .p = {v.memory_bytes}};
}

Words encode(const StreamInfo& v) noexcept {
  const std::uint64_t now = now_ns();
  return {.head = head(EventKind::Stream, v.device), .t0 = now, .t1 = now, .stream = v.stream, .stack_x = pair(0, v.name)};
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

inline void store_word(RawEvent& slot, std::size_t offset, std::uint64_t word) noexcept {
  std::memcpy(reinterpret_cast<char*>(&slot) + offset, &word, sizeof word);
}

template <class Event>
inline void store(RawEvent& slot, const Event& v) noexcept {
  const Words w = encode(v);
  store_word(slot, offsetof(RawEvent, kind), w.head);
  store_word(slot, offsetof(RawEvent, t0), w.t0);
  store_word(slot, offsetof(RawEvent, t1), w.t1);
  store_word(slot, offsetof(RawEvent, stream), w.stream);
  store_word(slot, offsetof(RawEvent, correlation), w.correlation);
  store_word(slot, offsetof(RawEvent, stack), w.stack_x);
  store_word(slot, offsetof(RawEvent, flags), w.flags);
  for (std::size_t i = 0; i < 4; ++i) store_word(slot, offsetof(RawEvent, p) + 8 * i, w.p[i]);
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
void record(const RangeEvent& v) noexcept { put(v); }
void record(const DeviceInfo& v) noexcept { put(v); }
void record(const StreamInfo& v) noexcept { put(v); }

}  // namespace gpudiag::rec
