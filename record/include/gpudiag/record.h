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
// captured when GPUDIAG_TRACE_STACKS is unset or "on". A recording that
// cannot start says why on stderr and appends that line to the existing file
// GPUDIAG_TRACE_ERRORS names (set by `gpudiag trace`). The trace file is
// never descriptor 0, 1 or 2: a program started with one of them closed
// finds it still closed.
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

#include "gpudiag/events.h"

namespace gpudiag::rec {

namespace detail {
// Defined in libgpudiag_record; true while a trace file is being written.
extern std::atomic<bool> g_enabled;
}  // namespace detail

// Is this process recording? One relaxed load: call it before building events.
inline bool enabled() noexcept { return detail::g_enabled.load(std::memory_order_relaxed); }

// A GPU tracer in this process (the CUPTI injection) records the CUDA work
// itself: kernels with their arguments, copies, syncs, CUDA's allocations.
// A runtime's own hooks then leave that work to it: recorded twice, with two
// sets of stream ids, it would be misread (frees on streams no kernel ran on).
void set_gpu_work_traced() noexcept;
bool gpu_work_traced() noexcept;

// The clock of every event: CLOCK_MONOTONIC in nanoseconds (a vDSO call:
// 41-50 ns on the KVM guest bench/trace was run on).
inline std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

using gpudiag::StackId;
using gpudiag::StringId;

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
// The events are gpudiag/events.h's, under the names the recording API has
// always used. For recording, a time of 0 means "now", an end of 0 the
// start, a tid of 0 the recording thread, and a Memcpy's Unknown copy kind
// the one its source and destination kinds imply.

using AllocEvent = gpudiag::Alloc;
using FreeEvent = gpudiag::Free;
using MemcpyEvent = gpudiag::Memcpy;
using MemsetEvent = gpudiag::Memset;
using KernelEvent = gpudiag::Kernel;
using KernelArgEvent = gpudiag::KernelArg;
using SyncEvent = gpudiag::Sync;
using ApiEvent = gpudiag::ApiCall;
using HostAccessEvent = gpudiag::HostAccess;
using OutOfMemoryEvent = gpudiag::OutOfMemory;
using FindingEvent = gpudiag::RaisedFinding;
using RangeEvent = gpudiag::Range;
using DeviceInfo = gpudiag::DeviceDesc;
using StreamInfo = gpudiag::StreamDesc;

// Out of line: each copies one fixed-size record into the thread's buffer.
// Safe to call when not recording (they do nothing).
void record(const AllocEvent& e) noexcept;
void record(const FreeEvent& e) noexcept;
void record(const MemcpyEvent& e) noexcept;
void record(const MemsetEvent& e) noexcept;
void record(const KernelEvent& e) noexcept;
void record(const KernelArgEvent& e) noexcept;
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
  // The writer thread compresses what it writes (DeflatedEvents chunks, about
  // 6 times smaller), except while a thread waits for it to write. Events
  // written by other threads (a thread that could not wait for the writer,
  // one that exits, a crash handler) are written as they are.
  // GPUDIAG_TRACE_COMPRESS=off turns it off.
  bool compress = true;
  // Bounds the trace's files on disk (GPUDIAG_TRACE_MAX_SIZE; 0: no bound).
  // Past a quarter of it, events go to a ring of segment files beside the
  // trace file, and the oldest segment is dropped when the files pass the
  // bound, keeping what the report needs of it (live allocations, errors,
  // first occurrences: trace/bound/retainer.h). Below a quarter of it, the
  // trace is one file, as without a bound.
  std::uint64_t max_size = 0;
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
