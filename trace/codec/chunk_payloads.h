// Decoding the payloads of the .gdtrace chunks that are more than a list of
// fields (FORMAT.md): Events and DeflatedEvents, Crash and GuardedAccess. Shared by the
// reader (trace/src) and whatever follows a trace while it is written
// (`gpudiag trace`'s live findings), so both read a chunk the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <libdeflate.h>

#include "gdtrace_format.h"

namespace gpudiag::gdtrace {

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Inflates DeflatedEvents payloads; one Inflater serves one thread at a time.
class Inflater {
 public:
  // The chunk's thread id and its events as unaligned RawEvents in `events`;
  // false when the payload is malformed: it must inflate to exactly its
  // count of events, no more than a plain Events chunk may hold.
  bool inflate(const char* p, std::uint32_t n, std::uint32_t& tid, std::vector<char>& events) {
    if (n < 8) return false;
    tid = load<std::uint32_t>(p);
    const auto count = load<std::uint32_t>(p + 4);
    const std::uint64_t bytes = std::uint64_t{count} * sizeof(RawEvent);
    if (bytes + 8 > kMaxChunk) return false;
    if (!decompressor_) {
      decompressor_.reset(libdeflate_alloc_decompressor());
      if (!decompressor_) throw std::bad_alloc();
    }
    events.resize(bytes);
    return libdeflate_deflate_decompress(decompressor_.get(), p + 8, n - 8, events.data(), events.size(), nullptr) ==
           LIBDEFLATE_SUCCESS;
  }

 private:
  struct Free {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  std::unique_ptr<libdeflate_decompressor, Free> decompressor_;
};

// The events of an Events or DeflatedEvents chunk, as unaligned RawEvents:
// in the payload itself, or inflated into a buffer of the caller's.
struct EventRecords {
  std::uint32_t tid = 0;  // the chunk's thread
  const char* data = nullptr;
  std::size_t count = 0;
  // The i-th event, with the chunk's thread where it names none of its own.
  RawEvent operator[](std::size_t i) const {
    RawEvent e = load<RawEvent>(data + i * sizeof(RawEvent));
    if (e.tid == 0) e.tid = tid;
    return e;
  }
};

// The events of a chunk of `type` Events or DeflatedEvents (`inflated`
// holds them for the latter); false when the payload is malformed.
inline bool read_event_records(ChunkType type, const char* p, std::uint32_t n, Inflater& inflater,
                               std::vector<char>& inflated, EventRecords& out) {
  if (type == ChunkType::DeflatedEvents) {
    if (!inflater.inflate(p, n, out.tid, inflated)) return false;
    out.data = inflated.data();
    out.count = inflated.size() / sizeof(RawEvent);
    return true;
  }
  if (type != ChunkType::Events || n < 8) return false;
  out.tid = load<std::uint32_t>(p);
  out.count = load<std::uint32_t>(p + 4);
  out.data = p + 8;
  return std::uint64_t{out.count} * sizeof(RawEvent) + 8 == n;
}

// The events of a Retained chunk: an Events chunk's payload, or a
// DeflatedEvents one's when shorter, whose first word is the dropped
// segment's seq, not a thread. False when the payload is malformed.
inline bool read_retained_records(const char* p, std::uint32_t n, Inflater& inflater, std::vector<char>& inflated,
                                  std::uint32_t& seq, EventRecords& out) {
  if (n < 8) return false;
  const bool plain = std::uint64_t{load<std::uint32_t>(p + 4)} * sizeof(RawEvent) + 8 == n;
  if (!read_event_records(plain ? ChunkType::Events : ChunkType::DeflatedEvents, p, n, inflater, inflated, out))
    return false;
  seq = out.tid;
  out.tid = 0;
  return true;
}

// The fields a Crash and a GuardedAccess chunk share: a thread, flags and
// the frames innermost first, after 28 bytes of their own.
struct FaultFrames {
  std::uint32_t tid = 0;
  std::uint16_t flags = 0;
  std::vector<std::uint64_t> frames;
};

// False when the payload is malformed.
inline bool read_fault_frames(const char* p, std::uint32_t n, FaultFrames& out) {
  if (n < 32) return false;
  const auto count = load<std::uint16_t>(p + 28);
  if (std::uint64_t{count} * 8 + 32 != n) return false;
  out.tid = load<std::uint32_t>(p + 24);
  out.flags = load<std::uint16_t>(p + 30);
  out.frames.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) out.frames[i] = load<std::uint64_t>(p + 32 + std::size_t{i} * 8);
  return true;
}

struct CrashPayload : FaultFrames {
  std::int32_t signal = 0, code = 0;
  std::uint64_t address = 0, time_ns = 0;
};

inline bool read_crash(const char* p, std::uint32_t n, CrashPayload& out) {
  if (!read_fault_frames(p, n, out)) return false;
  out.signal = load<std::int32_t>(p);
  out.code = load<std::int32_t>(p + 4);
  out.address = load<std::uint64_t>(p + 8);
  out.time_ns = load<std::uint64_t>(p + 16);
  return true;
}

struct GuardedAccessPayload : FaultFrames {
  std::uint64_t time_ns = 0, address = 0, guarded_copy = 0;  // the copy's correlation id
  bool write() const { return (flags & kGuardedWrite) != 0; }
};

inline bool read_guarded_access(const char* p, std::uint32_t n, GuardedAccessPayload& out) {
  if (!read_fault_frames(p, n, out)) return false;
  out.time_ns = load<std::uint64_t>(p);
  out.address = load<std::uint64_t>(p + 8);
  out.guarded_copy = load<std::uint64_t>(p + 16);
  return true;
}

}  // namespace gpudiag::gdtrace
