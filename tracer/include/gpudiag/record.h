// The recording API: what libgdrt's hooks and the CUPTI injection library call
// to put events into the running process's trace.
//
// Cost model: when tracing is off, `emit(...)` is one relaxed atomic load and a
// not-taken branch (~1 ns). When on, an event is copied into a per-thread
// buffer (no lock, ~20 ns of the caller's CPU in bench/trace); a writer thread
// streams each completed half of a buffer to the .gdtrace file.
//
// Activation: libgpudiag_record activates itself when the process starts with
// GPUDIAG_TRACE=<file pattern> in its environment (`%p` becomes the pid; set
// by `gpudiag trace`), or when a program calls rec::start(). Stacks are
// captured when GPUDIAG_TRACE_STACKS is unset or "on".
//
// Usage from the runtime:
//
//   namespace rec = gpudiag::rec;
//   if (rec::enabled()) {
//     rec::record(rec::AllocEvent{.addr = a, .bytes = n, .kind = gpudiag::MemKind::Device,
//                                 .device = 0, .stack = rec::capture_stack()});
//   }
//
// or, when building the event is cheap, `rec::emit(rec::FreeEvent{...})` which
// tests enabled() itself. Timestamps are nanoseconds of CLOCK_MONOTONIC
// (rec::now_ns()); a zero time_ns means "now".
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string_view>

#include "gpudiag/event_types.h"

namespace gpudiag::rec {

namespace detail {
// Defined in libgpudiag_record; true while a trace file is being written.
extern std::atomic<bool> g_enabled;
}  // namespace detail

// Is this process recording? One relaxed load: call it before building events.
inline bool enabled() noexcept { return detail::g_enabled.load(std::memory_order_relaxed); }

// The clock of every event: CLOCK_MONOTONIC in nanoseconds (a vDSO call:
// 41-50 ns on the KVM guest bench/trace was run on).
inline std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

using StringId = std::uint32_t;  // 0 is the empty string
using StackId = std::uint32_t;   // 0 is "no stack"

// Interns a string (kernel, API or op name; rule id; message) into the trace
// and returns its id. Thread-safe; takes a lock, so cache ids of fixed names
// (e.g. in a function-local static). Returns 0 when not recording.
StringId intern(std::string_view text) noexcept;

// Captures the calling thread's stack (return addresses, via libunwind),
// interns it and returns its id; `skip` drops that many innermost frames
// besides capture_stack itself. Returns 0 when not recording or when stacks
// are off. Symbols are resolved at report time from the recorded modules.
StackId capture_stack(int skip = 0) noexcept;
bool stacks_enabled() noexcept;

// ---- events ---------------------------------------------------------------
// Common fields: time (ns, 0 = now), device (kHostDevice = -1 for host),
// stream (the backend's stream handle or id, 0 = default stream),
// correlation (links an API call to the GPU work it launched), stack.

struct AllocEvent {
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  MemKind kind = MemKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;  // stream-ordered allocations
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

struct FreeEvent {
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;  // 0 if the caller does not know
  MemKind kind = MemKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;  // stream-ordered frees (cudaFreeAsync)
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

struct MemcpyEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // 0: same as start (an enqueue, not yet completed)
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
  CopyKind copy = CopyKind::Unknown;  // Unknown: derived from src/dst kinds
  MemKind src_kind = MemKind::Unknown;
  MemKind dst_kind = MemKind::Unknown;
  bool async = false;
  std::int32_t device = kHostDevice;
  std::int32_t peer_device = kHostDevice;  // the other device of a PtoP copy
  std::uint64_t stream = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

struct MemsetEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  MemKind kind = MemKind::Unknown;
  bool async = false;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

// A kernel execution (start..end on the device) or, from a host hook that only
// sees the launch, start = end = launch time.
struct KernelEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;  // demangled when possible
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t block[3] = {1, 1, 1};
  std::uint32_t shared_bytes = 0;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

// The host blocked (or, for StreamWaitEvent, a stream waited) from start to end.
struct SyncEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  SyncKind kind = SyncKind::Unknown;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0;
  std::uint64_t event = 0;  // the CUDA event (or gdrt event) waited on
  std::uint64_t correlation = 0;
  StackId stack = 0;
};

// A call into an API (CUDA runtime/driver, or a gdrt op), with its status
// (0 = success; CUDA error numbers otherwise).
struct ApiEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;
  ApiDomain domain = ApiDomain::Other;
  std::int32_t status = 0;
  std::int32_t device = kHostDevice;
  std::uint64_t correlation = 0;
  StackId stack = 0;
  // The OS thread that made the call, when another thread records it (CUPTI
  // delivers API records on its own thread); 0: the recording thread.
  std::uint32_t tid = 0;
  // What a launch call launched (the kernel's name), 0 for other calls: when
  // the kernel faults, its own activity record may never arrive.
  StringId symbol = 0;
};

// The host read or wrote a buffer (gdrt: item(), host views of tensors).
struct HostAccessEvent {
  std::uint64_t time_ns = 0;
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  AccessKind access = AccessKind::Read;
  std::int32_t device = kHostDevice;  // the device that owns the memory
  StackId stack = 0;
};

// An allocation failed for lack of memory.
struct OutOfMemoryEvent {
  std::uint64_t time_ns = 0;
  std::uint64_t requested_bytes = 0;
  std::uint64_t free_bytes = 0;      // what the device reported free, 0 if unknown
  std::uint64_t capacity_bytes = 0;  // 0 if unknown
  std::int32_t device = kHostDevice;
  StackId stack = 0;
};

// A finding the traced process raised itself (e.g. gdrt's mixed-device check).
struct FindingEvent {
  std::uint64_t time_ns = 0;
  StringId rule_id = 0;  // intern("GD001")
  StringId message = 0;
  StackId stack = 0;
};

// A named span of the program's own time: a training step, an NVTX range.
// Reports take ranges named as PyTorch's profiler names its steps,
// "ProfilerStep#N", for the iterations of a run.
struct RangeEvent {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  StringId name = 0;
};

// Describes a device once (name, memory capacity).
struct DeviceInfo {
  std::int32_t device = 0;
  StringId name = 0;
  std::uint64_t memory_bytes = 0;
};

// Names a stream once.
struct StreamInfo {
  std::int32_t device = 0;
  std::uint64_t stream = 0;
  StringId name = 0;
};

// Out of line: each copies one fixed-size record into the thread's buffer.
// Safe to call when not recording (they do nothing).
void record(const AllocEvent& e) noexcept;
void record(const FreeEvent& e) noexcept;
void record(const MemcpyEvent& e) noexcept;
void record(const MemsetEvent& e) noexcept;
void record(const KernelEvent& e) noexcept;
void record(const SyncEvent& e) noexcept;
void record(const ApiEvent& e) noexcept;
void record(const HostAccessEvent& e) noexcept;
void record(const OutOfMemoryEvent& e) noexcept;
void record(const FindingEvent& e) noexcept;
void record(const RangeEvent& e) noexcept;
void record(const DeviceInfo& e) noexcept;
void record(const StreamInfo& e) noexcept;

// Records e if this process is recording.
template <class Event>
inline void emit(const Event& e) noexcept {
  if (enabled()) record(e);
}

// Adds n to the trace's dropped-event count (e.g. records CUPTI dropped).
void add_dropped(std::uint64_t n) noexcept;

// ---- control ----------------------------------------------------------------
struct Options {
  bool stacks = true;
  // Events per thread buffer and number of buffers: memory is bounded by
  // buffer_events * buffer_count * 88 bytes however long the run. A thread
  // briefly holds two buffers when it moves to a new one (the old one's last
  // half may still be being written). On SIGKILL a thread loses fewer than
  // buffer_events events. A thread that records faster than the file takes
  // its events waits once per half for the writer: larger halves mean fewer
  // of these waits (each costs the thread ~10 us of CPU in bench/trace).
  std::uint32_t buffer_events = 8192;
  // Each thread that has recorded holds a buffer until it exits, so this is
  // also how many threads can record at once before events are dropped.
  // Pages are touched only as buffers fill: unused ones cost address space.
  std::uint32_t buffer_count = 64;
  // How often the writer thread drains partly filled buffers, so that a
  // process killed without warning loses at most this much.
  std::uint32_t flush_interval_ms = 20;
  // Without a writer thread, events reach the file only on flush()/stop():
  // for tests and tools that want deterministic buffer use.
  bool writer_thread = true;
};

// Starts recording into `path_pattern` (`%p` is replaced by the pid). Returns
// false (and records nothing) if the file cannot be created or a trace is
// already being recorded. Normally unnecessary: GPUDIAG_TRACE starts it.
bool start(const char* path_pattern, const Options& options = {}) noexcept;
// Writes everything recorded so far and closes the file; enabled() turns false.
void stop() noexcept;
// Writes everything recorded so far (all threads) without stopping.
void flush() noexcept;
// The file being written ("" when not recording).
const char* trace_path() noexcept;

}  // namespace gpudiag::rec
