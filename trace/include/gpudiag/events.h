// The events of a trace, defined once: what the recording API takes
// (record.h's rec::AllocEvent is Alloc), what a loaded Trace holds in its
// columns (trace.h), and what the .gdtrace codec encodes and decodes
// (trace/codec/event_codec.h). Adding a field is one change here and one
// line in the codec.
//
// Common fields: time (ns; for the recording API 0 means "now"), device
// (kHostDevice = -1 for the host), stream (the backend's stream handle or
// id, 0 the default stream), tid (the host thread; 0 when recording means the
// recording thread), correlation (links an API call to the GPU work it
// issued, 0 none), stack (0 none). StringId and StackId name strings and
// stacks interned in the trace.
#pragma once

#include <cstdint>

#include "gpudiag/event_types.h"

namespace gpudiag {

using StringId = std::uint32_t;  // 0 = ""
using StackId = std::uint32_t;   // 0 = no stack
inline constexpr StackId kNoStack = 0;

// Describes a device once (name, memory capacity, UUID).
struct DeviceDesc {
  static constexpr EventKind event_kind = EventKind::Device;
  std::int32_t id = 0;
  StringId name = 0;
  std::uint64_t memory_bytes = 0;  // 0 unknown
  // The GPU's UUID as nvidia-smi writes it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-
  // xxxxxxxxxxxx": the one name of a GPU that ranks on one host, and
  // CUDA_VISIBLE_DEVICES, agree on. 0 when not said (an emulated device has none).
  StringId uuid = 0;

  bool operator==(const DeviceDesc&) const = default;
};

// Names a stream once, and says which CUDA stream handle (cudaStream_t) it
// is: what a program's own records of its streams use, such as PyTorch's
// allocator history.
struct StreamDesc {
  static constexpr EventKind event_kind = EventKind::Stream;
  std::int32_t device = 0;
  std::uint64_t id = 0;
  StringId name = 0;
  std::uint64_t handle = 0;   // the legacy default stream's is 0
  bool handle_known = false;

  bool operator==(const StreamDesc&) const = default;
};

struct Alloc {
  static constexpr EventKind event_kind = EventKind::Alloc;
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  MemKind kind = MemKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;  // stream-ordered allocations
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Alloc&) const = default;
};

struct Free {
  static constexpr EventKind event_kind = EventKind::Free;
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;  // 0 unknown (match by address)
  MemKind kind = MemKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;  // stream-ordered frees (cudaFreeAsync)
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Free&) const = default;
};

struct Memcpy {
  static constexpr EventKind event_kind = EventKind::Memcpy;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // recording: 0 is the start (an enqueue, not yet completed)
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
  CopyKind copy = CopyKind::Unknown;  // recording: Unknown is derived from src/dst kinds
  MemKind src_kind = MemKind::Unknown;
  MemKind dst_kind = MemKind::Unknown;
  bool async = false;
  std::int32_t device = kHostDevice;
  std::int32_t peer_device = kHostDevice;  // the other device of a PtoP copy
  std::uint64_t stream = 0;
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Memcpy&) const = default;
};

struct Memset {
  static constexpr EventKind event_kind = EventKind::Memset;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  MemKind kind = MemKind::Unknown;
  bool async = false;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Memset&) const = default;
};

// A kernel execution (start..end on the device) or, from a host hook that
// only sees the launch, start = end = launch time.
struct Kernel {
  static constexpr EventKind event_kind = EventKind::Kernel;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;  // demangled when possible
  std::uint32_t grid[3] = {0, 0, 0};  // 0: unknown
  std::uint32_t block[3] = {0, 0, 0};
  std::uint32_t shared_bytes = 0;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Kernel&) const = default;
};

// A pointer-sized parameter of a kernel launch, as the launch call passed it
// (CUPTI: read from the launch's parameter buffer; gdrt: its tensors), and
// what the value pointed into at that moment.
struct KernelArg {
  static constexpr EventKind event_kind = EventKind::KernelArg;
  std::uint64_t time_ns = 0;  // the launch call
  std::uint64_t value = 0;
  std::uint32_t index = 0;  // the parameter's position
  // Device, Pinned or Managed memory the driver knows; Pageable: host memory
  // the driver does not know (malloc, the stack), which a kernel cannot
  // read; Unknown: neither, a number rather than a pointer.
  MemKind memory = MemKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;  // the launch's
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;  // the launch's: its ApiCall and Kernel
  StackId stack = 0;              // the launch's, when taken

  bool operator==(const KernelArg&) const = default;
};

// The host blocked (or, for StreamWaitEvent, a stream waited) from start to end.
struct Sync {
  static constexpr EventKind event_kind = EventKind::Sync;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  SyncKind kind = SyncKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint64_t event = 0;  // the CUDA event (or gdrt event) waited on
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;

  bool operator==(const Sync&) const = default;
};

// A call into an API (CUDA runtime/driver, or a gdrt op), with its status
// (0 success; CUDA error numbers otherwise).
struct ApiCall {
  static constexpr EventKind event_kind = EventKind::Api;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;
  ApiDomain domain = ApiDomain::Other;
  std::int32_t status = 0;
  std::int32_t device = kHostDevice;
  // The OS thread that made the call (CUPTI delivers some records on its own thread).
  std::uint32_t tid = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;
  // What a launch call launched (the kernel's name), 0 for other calls: when
  // the kernel faults, its own activity record may never arrive.
  StringId symbol = 0;

  bool operator==(const ApiCall&) const = default;
};

// The host read or wrote a buffer (gdrt: item(), host views of tensors).
struct HostAccess {
  static constexpr EventKind event_kind = EventKind::HostAccess;
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;  // 0: not known (a guarded access: a fault gives only the address)
  AccessKind access = AccessKind::Read;
  std::int32_t device = kHostDevice;  // the device that owns the memory
  std::uint32_t tid = 0;
  StackId stack = 0;
  // The correlation of the asynchronous device-to-host copy whose destination
  // this access hit before a sync covered it (the copy guard's fault), 0 for
  // accesses a runtime's hooks recorded. Its stack starts at the faulting instruction.
  std::uint64_t guarded_copy = 0;

  bool operator==(const HostAccess&) const = default;
};

// An allocation failed for lack of memory.
struct OutOfMemory {
  static constexpr EventKind event_kind = EventKind::OutOfMemory;
  std::uint64_t time_ns = 0;
  std::uint64_t requested_bytes = 0;
  std::uint64_t free_bytes = 0;      // what the device reported free, 0 if unknown
  std::uint64_t capacity_bytes = 0;  // 0 if unknown
  // The largest block the caching allocator had free in its segments when
  // the request failed (PyTorch's snapshot at the out-of-memory), 0 if unknown.
  std::uint64_t largest_free_block_bytes = 0;
  std::int32_t device = kHostDevice;
  std::uint32_t tid = 0;
  StackId stack = 0;

  bool operator==(const OutOfMemory&) const = default;
};

// A finding the traced process raised itself (e.g. gdrt's mixed-device check).
struct RaisedFinding {
  static constexpr EventKind event_kind = EventKind::Finding;
  std::uint64_t time_ns = 0;
  StringId rule_id = 0;  // "GD001"
  StringId message = 0;
  std::uint32_t tid = 0;
  StackId stack = 0;

  bool operator==(const RaisedFinding&) const = default;
};

// A named span of the program's own time: a training step, an NVTX range.
// Reports take ranges named as PyTorch's profiler names its steps,
// "ProfilerStep#N", for the iterations of a run.
struct Range {
  static constexpr EventKind event_kind = EventKind::Range;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;
  std::uint32_t tid = 0;

  bool operator==(const Range&) const = default;
};

// Allocator totals sampled by the source (Kineto "[memory]": Total Allocated
// and Total Reserved; nsys memory usage). 0 where the source lacks one.
struct MemoryCounter {
  static constexpr EventKind event_kind = EventKind::MemoryCounter;
  std::uint64_t time_ns = 0;
  std::int32_t device = kHostDevice;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;

  bool operator==(const MemoryCounter&) const = default;
};

// When an event began and ended, whichever fields it has: an instant's
// time_ns, a span's start_ns..end_ns.
template <class Event>
constexpr std::uint64_t start_of(const Event& e) {
  if constexpr (requires { e.time_ns; })
    return e.time_ns;
  else
    return e.start_ns;
}
template <class Event>
constexpr std::uint64_t end_of(const Event& e) {
  if constexpr (requires { e.end_ns; })
    return e.end_ns;
  else
    return e.time_ns;
}

}  // namespace gpudiag
