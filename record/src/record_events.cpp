// record(...) for each event kind: encode one fixed-size RawEvent in the
// calling thread's buffer (event_codec.h says where each field goes).
//
// The common case (the caller gave the time, the buffer has room) makes no
// call at all, so it needs no stack frame; taking a timestamp or a new
// buffer half is left to an out-of-line slow path.
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "event_codec.h"
#include "recorder_state.h"

namespace gpudiag::rec {
namespace {

using gdtrace::RawEvent;
using gdtrace::Words;

// A copy whose kind the caller left Unknown goes the way its memory kinds say.
MemcpyEvent with_copy_kind(MemcpyEvent v) noexcept {
  if (v.copy == CopyKind::Unknown) v.copy = copy_kind_of(v.src_kind, v.dst_kind);
  return v;
}

// For recording, a span whose end is 0 is an enqueue, not yet completed: it ends where it starts.
template <class Event>
Words encode(const Event& v) noexcept {
  Words w;
  if constexpr (std::is_same_v<Event, MemcpyEvent>)
    w = gdtrace::encode(with_copy_kind(v));
  else
    w = gdtrace::encode(v);
  if (w.t1 == 0) w.t1 = w.t0;
  return w;
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
void record(const KernelArgEvent& v) noexcept { put(v); }
void record(const SyncEvent& v) noexcept { put(v); }
void record(const ApiEvent& v) noexcept { put(v); }
void record(const HostAccessEvent& v) noexcept { put(v); }
void record(const OutOfMemoryEvent& v) noexcept { put(v); }
void record(const FindingEvent& v) noexcept { put(v); }
void record(const RangeEvent& v) noexcept { put(v); }
void record(const DeviceInfo& v) noexcept { put(v); }
void record(const StreamInfo& v) noexcept { put(v); }

}  // namespace gpudiag::rec
