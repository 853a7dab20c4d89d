// Vocabulary shared by the recording API (record.h) and the in-memory Trace
// (trace.h): kinds of memory, copies, synchronisations and events. The numeric
// values are part of the .gdtrace format (trace/FORMAT.md): append new
// values, never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpudiag {

// Where a buffer lives. CUPTI numbers these differently (and nsys differently
// again); importers translate into this one numbering.
enum class MemKind : std::uint8_t { Unknown = 0, Pageable = 1, Pinned = 2, Device = 3, Managed = 4, Array = 5 };

// Direction of a copy. PtoP is device-to-device across two devices.
enum class CopyKind : std::uint8_t { Unknown = 0, HtoD = 1, DtoH = 2, DtoD = 3, HtoH = 4, PtoP = 5 };

// What a synchronisation waited for.
enum class SyncKind : std::uint8_t {
  Unknown = 0,
  Device = 1,           // cudaDeviceSynchronize
  Stream = 2,           // cudaStreamSynchronize
  Event = 3,            // cudaEventSynchronize
  StreamWaitEvent = 4,  // cudaStreamWaitEvent (device-side wait; host not blocked)
  Context = 5,          // cuCtxSynchronize
  Query = 6,            // cudaEventQuery or cudaStreamQuery that found the work done: ordered, but the host did not block
};

enum class AccessKind : std::uint8_t { Read = 0, Write = 1 };

// Which API layer a call belongs to.
enum class ApiDomain : std::uint8_t { Other = 0, Runtime = 1, Driver = 2, Gdrt = 3 };

// Kind tag of one recorded event, as stored in a .gdtrace events chunk.
enum class EventKind : std::uint8_t {
  Alloc = 1,
  Free = 2,
  Memcpy = 3,
  Memset = 4,
  Kernel = 5,
  Sync = 6,
  Api = 7,
  HostAccess = 8,
  OutOfMemory = 9,
  Finding = 10,
  MemoryCounter = 11,
  Device = 12,
  Stream = 13,
  Range = 14,
  KernelArg = 15,
};

// The largest value of each enum above that this version knows: a reader
// takes a larger one, from a newer writer, as unknown (0).
constexpr std::uint8_t max_value(MemKind) { return 5; }
constexpr std::uint8_t max_value(CopyKind) { return 5; }
constexpr std::uint8_t max_value(SyncKind) { return 6; }

// Whether the host waited in a sync of this kind: not in a stream's wait for
// an event, nor in a query that found the work already done.
constexpr bool host_waits(SyncKind k) { return k != SyncKind::StreamWaitEvent && k != SyncKind::Query; }
constexpr std::uint8_t max_value(AccessKind) { return 1; }
constexpr std::uint8_t max_value(ApiDomain) { return 3; }

// Device number of host memory and host-side events.
inline constexpr std::int32_t kHostDevice = -1;

constexpr std::string_view to_string(MemKind k) {
  switch (k) {
    case MemKind::Pageable: return "pageable";
    case MemKind::Pinned: return "pinned";
    case MemKind::Device: return "device";
    case MemKind::Managed: return "managed";
    case MemKind::Array: return "array";
    case MemKind::Unknown: break;
  }
  return "unknown";
}

constexpr std::string_view to_string(CopyKind k) {
  switch (k) {
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::PtoP: return "PtoP";
    case CopyKind::Unknown: break;
  }
  return "unknown";
}

constexpr std::string_view to_string(SyncKind k) {
  switch (k) {
    case SyncKind::Device: return "device";
    case SyncKind::Stream: return "stream";
    case SyncKind::Event: return "event";
    case SyncKind::StreamWaitEvent: return "stream-wait-event";
    case SyncKind::Context: return "context";
    case SyncKind::Query: return "query";
    case SyncKind::Unknown: break;
  }
  return "unknown";
}

constexpr std::string_view to_string(ApiDomain d) {
  switch (d) {
    case ApiDomain::Runtime: return "cuda-runtime";
    case ApiDomain::Driver: return "cuda-driver";
    case ApiDomain::Gdrt: return "gdrt";
    case ApiDomain::Other: break;
  }
  return "other";
}

// Host-side memory kinds: copies between two of them are HtoH, and so on.
constexpr bool is_host(MemKind k) { return k == MemKind::Pageable || k == MemKind::Pinned; }

// The direction implied by the two memory kinds (managed counts as device).
constexpr CopyKind copy_kind_of(MemKind src, MemKind dst) {
  if (src == MemKind::Unknown || dst == MemKind::Unknown) return CopyKind::Unknown;
  const bool hs = is_host(src), hd = is_host(dst);
  if (hs && hd) return CopyKind::HtoH;
  if (hs) return CopyKind::HtoD;
  if (hd) return CopyKind::DtoH;
  return CopyKind::DtoD;
}

}  // namespace gpudiag
