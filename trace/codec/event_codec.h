// Where each field of each event (gpudiag/events.h) lives in a .gdtrace
// RawEvent: one fields() per kind, read by the recorder and the writer to
// encode and by the reader to decode, so the two directions cannot disagree.
// Adding a field to an event is one line here. The layout is documented in
// FORMAT.md and gdtrace_format.h.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gdtrace_format.h"
#include "gpudiag/events.h"

namespace gpudiag::gdtrace {

// A RawEvent as its eleven 8-byte words. The recorder stores an event a word
// at a time: 11 stores instead of ~18 for the byte, 16- and 32-bit fields,
// which bench/trace measured as a third of an event's cost.
struct Words {
  std::uint64_t head = 0;  // kind, a, b, c, device
  std::uint64_t t0 = 0, t1 = 0, stream = 0, correlation = 0;
  std::uint64_t stack_x = 0;  // stack, x
  std::uint64_t flags = 0;    // flags, reserved0, tid
  std::uint64_t p[4] = {};
};
static_assert(sizeof(Words) == sizeof(RawEvent));
static_assert(std::endian::native == std::endian::little);
static_assert(offsetof(RawEvent, kind) == 0 && offsetof(RawEvent, device) == 4 && offsetof(RawEvent, t0) == 8 &&
              offsetof(RawEvent, stream) == 24 && offsetof(RawEvent, correlation) == 32 &&
              offsetof(RawEvent, stack) == 40 && offsetof(RawEvent, x) == 44 && offsetof(RawEvent, flags) == 48 &&
              offsetof(RawEvent, tid) == 52 && offsetof(RawEvent, p) == 56);

// The small enum slots of the head word.
enum class Slot : unsigned { A = 8, B = 16, C = 24 };

template <class V, class T>
concept Is = std::same_as<std::remove_const_t<V>, T>;

// ---- one fields() per kind ----------------------------------------------------
// An event without t1 is an instant: t1 is written as t0. String ids are
// x_string/p_string.
// A field added to an event changes its size: the size checks below then
// send whoever added it here, to give it its place.
static_assert(sizeof(Alloc) == 64);
static_assert(sizeof(Free) == 64);
static_assert(sizeof(Memcpy) == 88);
static_assert(sizeof(Memset) == 80);
static_assert(sizeof(Kernel) == 88);
static_assert(sizeof(KernelArg) == 64);
static_assert(sizeof(Sync) == 64);
static_assert(sizeof(ApiCall) == 56);
static_assert(sizeof(HostAccess) == 48);
static_assert(sizeof(OutOfMemory) == 56);
static_assert(sizeof(RaisedFinding) == 24);
static_assert(sizeof(Range) == 24);
static_assert(sizeof(MemoryCounter) == 32);
static_assert(sizeof(DeviceDesc) == 24);
static_assert(sizeof(StreamDesc) == 40);

template <class IO, Is<Alloc> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.kind), io.device(v.device), io.t0(v.time_ns), io.stream(v.stream);
  io.correlation(v.correlation), io.stack(v.stack), io.tid(v.tid), io.p(0, v.addr), io.p(1, v.bytes);
}

template <class IO, Is<Free> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.kind), io.device(v.device), io.t0(v.time_ns), io.stream(v.stream);
  io.correlation(v.correlation), io.stack(v.stack), io.tid(v.tid), io.p(0, v.addr), io.p(1, v.bytes);
}

template <class IO, Is<Memcpy> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.copy), io.enum8(Slot::B, v.src_kind), io.enum8(Slot::C, v.dst_kind), io.device(v.device);
  io.t0(v.start_ns), io.t1(v.end_ns), io.stream(v.stream), io.correlation(v.correlation), io.stack(v.stack);
  io.x(v.peer_device), io.flag(kFlagAsync, v.async), io.tid(v.tid), io.p(0, v.dst), io.p(1, v.src), io.p(2, v.bytes);
}

template <class IO, Is<Memset> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.kind), io.device(v.device), io.t0(v.start_ns), io.t1(v.end_ns), io.stream(v.stream);
  io.correlation(v.correlation), io.stack(v.stack), io.x(v.value), io.flag(kFlagAsync, v.async), io.tid(v.tid);
  io.p(0, v.addr), io.p(1, v.bytes);
}

template <class IO, Is<Kernel> V>
void fields(IO& io, V& v) {
  io.device(v.device), io.t0(v.start_ns), io.t1(v.end_ns), io.stream(v.stream), io.correlation(v.correlation);
  io.stack(v.stack), io.x_string(v.name), io.tid(v.tid);
  io.p32(0, v.grid[0]), io.p32(1, v.grid[1]), io.p32(2, v.grid[2]);
  io.p32(3, v.block[0]), io.p32(4, v.block[1]), io.p32(5, v.block[2]), io.p32(6, v.shared_bytes);
}

template <class IO, Is<KernelArg> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.memory), io.device(v.device), io.t0(v.time_ns), io.stream(v.stream);
  io.correlation(v.correlation), io.stack(v.stack), io.x(v.index), io.tid(v.tid), io.p(0, v.value);
}

template <class IO, Is<Sync> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.kind), io.device(v.device), io.t0(v.start_ns), io.t1(v.end_ns), io.stream(v.stream);
  io.correlation(v.correlation), io.stack(v.stack), io.tid(v.tid), io.p(0, v.event);
}

template <class IO, Is<ApiCall> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.domain), io.device(v.device), io.t0(v.start_ns), io.t1(v.end_ns);
  io.correlation(v.correlation), io.stack(v.stack), io.x_string(v.name), io.tid(v.tid);
  io.p(0, v.status), io.p_string(1, v.symbol);
}

template <class IO, Is<HostAccess> V>
void fields(IO& io, V& v) {
  io.enum8(Slot::A, v.access), io.device(v.device), io.t0(v.time_ns), io.stack(v.stack), io.tid(v.tid);
  io.p(0, v.addr), io.p(1, v.bytes), io.p(2, v.guarded_copy);
}

template <class IO, Is<OutOfMemory> V>
void fields(IO& io, V& v) {
  io.device(v.device), io.t0(v.time_ns), io.stack(v.stack), io.tid(v.tid);
  io.p(0, v.requested_bytes), io.p(1, v.free_bytes), io.p(2, v.capacity_bytes), io.p(3, v.largest_free_block_bytes);
}

template <class IO, Is<RaisedFinding> V>
void fields(IO& io, V& v) {
  io.device_fixed(kHostDevice), io.t0(v.time_ns), io.stack(v.stack), io.x_string(v.rule_id), io.tid(v.tid);
  io.p_string(0, v.message);
}

template <class IO, Is<Range> V>
void fields(IO& io, V& v) {
  io.device_fixed(kHostDevice), io.t0(v.start_ns), io.t1(v.end_ns), io.x_string(v.name), io.tid(v.tid);
}

template <class IO, Is<MemoryCounter> V>
void fields(IO& io, V& v) {
  io.device(v.device), io.t0(v.time_ns), io.p(0, v.allocated_bytes), io.p(1, v.reserved_bytes);
}

template <class IO, Is<DeviceDesc> V>
void fields(IO& io, V& v) {
  io.device(v.id), io.x_string(v.name), io.p(0, v.memory_bytes), io.p_string(1, v.uuid);
}

template <class IO, Is<StreamDesc> V>
void fields(IO& io, V& v) {
  io.device(v.device), io.stream(v.id), io.x_string(v.name), io.p(0, v.handle), io.flag(kFlagHandleKnown, v.handle_known);
}

// ---- the two directions -------------------------------------------------------

// Event -> words. String and stack ids are written as they are: the
// recorder's are the file's, and the writer writes a Trace's strings and
// stacks under their own ids.
class Encoder {
 public:
  explicit Encoder(EventKind kind) { w_.head = static_cast<std::uint8_t>(kind); }

  template <class E>
  void enum8(Slot s, const E& v) { w_.head |= std::uint64_t{static_cast<std::uint8_t>(v)} << static_cast<unsigned>(s); }
  void device(std::int32_t d) { w_.head |= std::uint64_t{static_cast<std::uint32_t>(d)} << 32; }
  void device_fixed(std::int32_t d) { device(d); }
  void t0(std::uint64_t t) { w_.t0 = t; }
  void t1(std::uint64_t t) { w_.t1 = t, has_t1_ = true; }
  void stream(std::uint64_t s) { w_.stream = s; }
  void correlation(std::uint64_t c) { w_.correlation = c; }
  void stack(StackId s) { w_.stack_x |= s; }
  template <class T>
  void x(const T& v) { w_.stack_x |= std::uint64_t{static_cast<std::uint32_t>(v)} << 32; }
  void x_string(StringId s) { x(s); }
  void flag(std::uint16_t bit, bool on) { w_.flags |= on ? bit : 0u; }
  void tid(std::uint32_t t) { w_.flags |= std::uint64_t{t} << 32; }
  template <class T>
  void p(int i, const T& v) {
    if constexpr (std::is_signed_v<T>)
      w_.p[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    else
      w_.p[i] = static_cast<std::uint64_t>(v);
  }
  void p_string(int i, StringId s) { w_.p[i] = s; }
  void p32(int i, std::uint32_t v) { w_.p[i / 2] |= std::uint64_t{v} << (32 * (i % 2)); }

  // An instant (no t1 of its own) ends where it starts.
  Words done() {
    if (!has_t1_) w_.t1 = w_.t0;
    return w_;
  }

 private:
  Words w_;
  bool has_t1_ = false;
};

template <class Event>
Words encode(const Event& v) {
  Encoder io(Event::event_kind);
  fields(io, v);
  return io.done();
}

inline RawEvent to_raw(const Words& w) {
  RawEvent e;
  std::memcpy(&e, &w, sizeof e);
  return e;
}

// Words -> event. `ids` maps the file's string and stack ids to the trace's:
// StringId string(std::uint32_t) and StackId stack(std::uint32_t). Enums
// beyond what this version knows become unknown.
template <class Ids>
class Decoder {
 public:
  Decoder(const RawEvent& e, const Ids& ids) : e_(e), ids_(ids) {}

  template <class E>
  void enum8(Slot s, E& v) {
    const std::uint8_t raw = s == Slot::A ? e_.a : s == Slot::B ? e_.b : e_.c;
    v = static_cast<E>(raw <= max_value(E{}) ? raw : 0);
  }
  void device(std::int32_t& d) { d = e_.device; }
  void device_fixed(std::int32_t) {}
  void t0(std::uint64_t& t) { t = e_.t0; }
  void t1(std::uint64_t& t) { t = e_.t1; }
  void stream(std::uint64_t& s) { s = e_.stream; }
  void correlation(std::uint64_t& c) { c = e_.correlation; }
  void stack(StackId& s) { s = ids_.stack(e_.stack); }
  template <class T>
  void x(T& v) { v = static_cast<T>(e_.x); }
  void x_string(StringId& s) { s = ids_.string(e_.x); }
  void flag(std::uint16_t bit, bool& on) { on = (e_.flags & bit) != 0; }
  void tid(std::uint32_t& t) { t = e_.tid; }
  template <class T>
  void p(int i, T& v) {
    if constexpr (std::is_signed_v<T>)
      v = static_cast<T>(static_cast<std::int64_t>(e_.p[i]));
    else
      v = static_cast<T>(e_.p[i]);
  }
  void p_string(int i, StringId& s) { s = ids_.string(static_cast<std::uint32_t>(e_.p[i])); }
  void p32(int i, std::uint32_t& v) { v = static_cast<std::uint32_t>(e_.p[i / 2] >> (32 * (i % 2))); }

 private:
  const RawEvent& e_;
  const Ids& ids_;
};

template <class Event, class Ids>
Event decode(const RawEvent& e, const Ids& ids) {
  Event v{};
  Decoder<Ids> io(e, ids);
  fields(io, v);
  return v;
}

}  // namespace gpudiag::gdtrace
