// Internal state of the in-process recorder, shared by its source files.
//
// Buffers come from a fixed pool. A thread owns one buffer at a time and
// appends events to it without a lock, publishing each with a release store
// of `committed`. Anyone who drains a buffer (the writer thread, the owner, a
// crash handler, exit) claims the range [flushed, committed) with one CAS on
// `flushed` and writes it straight from the buffer, so no event is written
// twice and none is skipped; `readers` counts drainers between their claim
// and the end of their write(2).
//
// Loss bound on SIGKILL: a thread's buffer is filled in two halves. When a
// half is complete the writer thread is woken to write it, and before the
// thread completes its next half, the previous one must be in the file (written
// by the writer, or by the owner itself when the writer has not claimed it).
// So at any moment at most one half waits for the writer and one half is
// being filled: less than one buffer (buffer_events) per thread is unwritten.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "gdtrace_format.h"
#include "gpudiag/record.h"
#include "segment_ring.h"
#include "chunk_writing.h"

namespace gpudiag::rec::detail {

enum class BufferState : std::uint8_t { Free, Owned, Retired };

struct Buffer {
  std::atomic<std::uint32_t> committed{0};
  std::atomic<std::uint32_t> flushed{0};
  std::atomic<BufferState> state{BufferState::Free};
  std::atomic<int> readers{0};  // drainers between their claim and the end of their write
  std::atomic<std::uint32_t> lease{0};  // +1 each time it is recycled
  // When it was last taken by a thread (Recorder::acquisitions): drain_all
  // writes older buffers first, so a thread's events reach the file in order.
  std::atomic<std::uint64_t> acquired{0};
  std::uint32_t tid = 0;
  gdtrace::RawEvent* events = nullptr;
};

struct Recorder {
  Options options;
  int fd = -1;  // the trace file: definitions, crashes, markers, and events unless bounded
  // With Options::max_size: where events go instead (the ring of segment
  // files), kept up by the writer thread. Never freed, like the Recorder.
  gdtrace::SegmentRing* ring = nullptr;
  // Writing the trace failed (a full disk, a file size limit), or its ring
  // could not keep the bound: recording stopped, the program goes on. The
  // errno, 0 while recording goes on.
  std::atomic<int> write_error{0};
  std::uint64_t pid = 0;
  std::uint64_t generation = 0;
  char path[4096] = {};

  std::uint32_t capacity = 0;   // events per buffer
  std::uint32_t pool_size = 0;  // buffers
  Buffer* pool = nullptr;       // never freed: late threads may still point in

  std::mutex free_mutex;
  std::vector<Buffer*> free_list;
  std::atomic<std::uint64_t> acquisitions{0};

  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> dropped_written{0};
  std::atomic<std::uint64_t> events_written{0};
  std::atomic<int> writes_in_flight{0};
  // A fatal fault is recorded once, by whichever handler in the chain sees it first.
  std::atomic<bool> crash_recorded{false};

  std::mutex wake_mutex;
  std::condition_variable wake;
  // Owners blocked until their previous half is in the file (ensure_written);
  // the writer thread notifies after each round when there are any.
  std::condition_variable written;
  std::atomic<int> owners_waiting{0};
  bool stop_requested = false;  // under wake_mutex
  // An owner sets work_pending, and takes wake_mutex to notify only when the
  // writer is (about to be) asleep: both sequentially consistent, so either
  // the writer sees the work or the owner sees it asleep.
  std::atomic<bool> work_pending{false};
  std::atomic<bool> writer_asleep{false};
  std::thread writer;
};

// The active recorder, or nullptr.
extern std::atomic<Recorder*> g_recorder;

using gdtrace::write_all;
// Where the event chunks go: the trace file, or the ring's current segment.
inline int events_fd(const Recorder& r) noexcept { return r.ring != nullptr ? r.ring->events_fd() : r.fd; }
// Stops recording after a write failed for want of room, so that a full
// disk costs the program nothing more. Async-signal-safe.
void stop_on_write_failure(Recorder& r, int error) noexcept;
// Stops recording for good, whatever the error: the trace then has no End
// chunk, as the recording did not end when the program did.
void stop_recording_after(Recorder& r, int error) noexcept;
// Writes a chunk with one write(2) (O_APPEND keeps concurrent chunks whole).
// `staging` must hold sizeof(ChunkHeader) + payload bytes; the payload must
// already be at staging + sizeof(ChunkHeader). Async-signal-safe.
bool write_chunk(int fd, gdtrace::ChunkType type, char* staging, std::uint32_t payload_bytes) noexcept;
// Same for a payload given separately (copies into a stack or heap buffer).
bool write_small_chunk(int fd, gdtrace::ChunkType type, const void* payload, std::uint32_t bytes) noexcept;

// Who drains: a thread may also make a bounded ring's next segment ready
// (which allocates and locks); a signal handler may not.
enum class DrainFrom { Thread, SignalHandler };
// Claims the unwritten events of b and writes them from the buffer with one
// writev(2), compressed when a deflater is given. Async-signal-safe without
// one, from a signal handler.
void drain_buffer(Recorder& r, Buffer& b, gdtrace::Deflater* deflater = nullptr,
                  DrainFrom from = DrainFrom::Thread) noexcept;
// Drains every buffer in the pool, oldest acquisition first (a thread's
// retired buffer before the one it now fills: no hole if the process is
// killed mid-way), and writes the dropped count if it changed.
void drain_all(Recorder& r, gdtrace::Deflater* deflater = nullptr, DrainFrom from = DrainFrom::Thread) noexcept;

// The generation of the active recording (each start() makes a new one), or
// 0 when none: the hot path compares it with the thread's cursor.
extern std::atomic<std::uint64_t> g_generation;

// Where the calling thread appends: its buffer and the owner's copy of the
// buffer's `committed` (no load from a cache line the writer also reads).
struct Cursor {
  Buffer* buffer = nullptr;
  gdtrace::RawEvent* events = nullptr;  // buffer->events
  std::uint32_t n = 0;                  // events committed to buffer
  std::uint32_t limit = 0;              // the next half boundary
  std::uint64_t generation = 0;         // of the recording `buffer` belongs to
};
// constinit: no TLS wrapper call or guard on the hot path. Not initial-exec:
// that model marks the library STATIC_TLS, and the CUDA driver's dlopen of
// the CUPTI injection library (which needs this one) then fails once the
// loader's static TLS surplus is used up. The library is built with TLS
// descriptors (-mtls-dialect=gnu2) instead: a module loaded at start-up, or
// placed in the static surplus by dlopen, resolves the cursor with one load
// from the GOT, and any other takes the slower __tls_get_addr-like path.
extern constinit thread_local Cursor t_cursor;

// begin_event() when the thread has no buffer yet, reached a half boundary
// of its buffer, or its buffer belongs to an earlier recording.
gdtrace::RawEvent* begin_event_slow(Cursor& c) noexcept;

// Slot for the calling thread's next event, or nullptr (not recording, or
// the pool is exhausted: the event is counted as dropped). Inline: the
// common case is two loads and two compares, not a call.
inline bool has_room(const Cursor& c) noexcept {
  return c.generation == g_generation.load(std::memory_order_acquire) && c.n != c.limit;
}
inline gdtrace::RawEvent* begin_event(Cursor& c) noexcept {
  if (has_room(c)) [[likely]] return &c.events[c.n];
  return begin_event_slow(c);
}
inline void commit_event(Cursor& c) noexcept { c.buffer->committed.store(++c.n, std::memory_order_release); }

// crash.cpp
void install_crash_handlers(Recorder& r) noexcept;
// Flush from a context where only async-signal-safe calls are allowed. An
// exit_status of 0..255 (the process is exiting with it: _exit) is written
// before the End chunk; -1 (a fatal signal) writes none.
void emergency_flush(int exit_status = -1) noexcept;
// The Exit chunk: the process is exiting with this status.
void write_exit_status(Recorder& r, int exit_status) noexcept;

// intern.cpp
// fork(): the interning lock is held across it, so that no other thread
// holds it at that moment; the child, where that thread would not exist,
// starts with a fresh one.
void interning_before_fork() noexcept;
void interning_after_fork_in_parent() noexcept;
void interning_after_fork_in_child() noexcept;
void write_process_info(Recorder& r) noexcept;
// identity.cpp: the Identity chunk (host, pid, place in a job, clock offset).
void write_identity(Recorder& r) noexcept;
// The modules loaded now, so that a crash's stack, which cannot take the
// interning lock, still resolves in the program and the libraries it linked.
void write_loaded_modules(Recorder& r) noexcept;

std::uint32_t current_tid() noexcept;

}  // namespace gpudiag::rec::detail
