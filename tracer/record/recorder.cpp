// The recorder: buffer pool, lock-free per-thread append, writer thread,
// start/stop/flush and activation from GPUDIAG_TRACE.
#include <fcntl.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "recorder_state.h"

namespace gpudiag::rec {
namespace detail {

std::atomic<bool> g_enabled{false};
std::atomic<Recorder*> g_recorder{nullptr};

// Initial-exec TLS: a plain load, no __tls_get_addr call on the hot path.
__attribute__((tls_model("initial-exec"))) thread_local Buffer* t_buffer = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t t_generation = 0;

namespace {

std::mutex g_control_mutex;  // start/stop/flush
pthread_key_t g_thread_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void wake_writer(Recorder& r) {
  std::lock_guard<std::mutex> lock(r.wake_mutex);
  r.wake.notify_one();
}

// Runs when a thread that recorded exits: its buffer can be recycled once drained.
void on_thread_exit(void*) {
  if (Buffer* b = t_buffer) {
    t_buffer = nullptr;
    if (Recorder* r = g_recorder.load()) r->retired_pending.fetch_add(1);
    b->state.store(BufferState::Retired, std::memory_order_release);
  }
}

void make_key() { pthread_key_create(&g_thread_exit_key, on_thread_exit); }

void recycle_drained(Recorder& r);

Buffer* pop_free(Recorder& r) {
  std::lock_guard<std::mutex> lock(r.free_mutex);
  if (r.free_list.empty()) return nullptr;
  Buffer* b = r.free_list.back();
  r.free_list.pop_back();
  return b;
}

Buffer* acquire_buffer(Recorder& r) {
  Buffer* b = pop_free(r);
  if (b == nullptr) {
    // Buffers already written but not yet recycled by a busy writer thread.
    recycle_drained(r);
    b = pop_free(r);
  }
  if (b == nullptr) {
    wake_writer(r);  // it may recycle drained buffers
    return nullptr;
  }
  b->tid = current_tid();
  b->state.store(BufferState::Owned, std::memory_order_release);
  pthread_once(&g_key_once, make_key);
  pthread_setspecific(g_thread_exit_key, reinterpret_cast<void*>(1));
  return b;
}

void recycle_drained(Recorder& r) {
  for (std::uint32_t i = 0; i < r.pool_size; ++i) {
    Buffer& b = r.pool[i];
    if (b.state.load(std::memory_order_acquire) != BufferState::Retired) continue;
    if (b.flushed.load(std::memory_order_acquire) != b.committed.load(std::memory_order_acquire)) continue;
    // The CAS makes sure only one of writer thread / flush() recycles it.
    BufferState retired = BufferState::Retired;
    if (!b.state.compare_exchange_strong(retired, BufferState::Free, std::memory_order_acq_rel)) continue;
    for (int spin = 0; b.readers.load() != 0 && spin < 100000; ++spin) std::this_thread::yield();
    b.committed.store(0);
    b.flushed.store(0);
    r.retired_pending.fetch_sub(1);
    std::lock_guard<std::mutex> lock(r.free_mutex);
    r.free_list.push_back(&b);
  }
}

void writer_loop(Recorder* r) {
  std::unique_lock<std::mutex> lock(r->wake_mutex);
  while (!r->stop_requested) {
    r->wake.wait_for(lock, std::chrono::milliseconds(r->options.flush_interval_ms));
    lock.unlock();
    drain_all(*r, r->writer_staging.data());
    recycle_drained(*r);
    lock.lock();
  }
}

void expand_pattern(const char* pattern, char* out, std::size_t size) {
  std::size_t n = 0;
  char pid[32];
  std::snprintf(pid, sizeof pid, "%ld", static_cast<long>(getpid()));
  for (const char* p = pattern; *p && n + 1 < size; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      for (const char* q = pid; *q && n + 1 < size; ++q) out[n++] = *q;
      ++p;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
}

bool write_all(int fd, const char* data, std::size_t size) noexcept {
  while (size > 0) {
    ssize_t w = ::write(fd, data, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

Options g_last_options;
char g_last_pattern[4096] = {};

void after_fork_in_child() {
  // The writer thread does not exist in the child. A forked child gets its
  // own trace when the pattern names files by pid; otherwise it stops.
  Recorder* r = g_recorder.load();
  if (r == nullptr) return;
  g_enabled.store(false);
  g_recorder.store(nullptr);  // the parent's state is abandoned, not freed
  new (&g_control_mutex) std::mutex();
  if (std::strstr(g_last_pattern, "%p") != nullptr) start(g_last_pattern, g_last_options);
}

}  // namespace

std::uint32_t current_tid() noexcept { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

bool write_chunk(int fd, gdtrace::ChunkType type, char* staging, std::uint32_t payload_bytes) noexcept {
  gdtrace::ChunkHeader h{};
  h.tag = gdtrace::kChunkTag;
  h.type = static_cast<std::uint16_t>(type);
  h.length = payload_bytes;
  h.crc = gdtrace::checksum(staging + sizeof h, payload_bytes);
  std::memcpy(staging, &h, sizeof h);
  return write_all(fd, staging, sizeof h + payload_bytes);
}

bool write_small_chunk(int fd, gdtrace::ChunkType type, const void* payload, std::uint32_t bytes) noexcept {
  char local[4096];
  char* staging = local;
  std::vector<char> heap;
  if (bytes + sizeof(gdtrace::ChunkHeader) > sizeof local) {
    heap.resize(bytes + sizeof(gdtrace::ChunkHeader));
    staging = heap.data();
  }
  std::memcpy(staging + sizeof(gdtrace::ChunkHeader), payload, bytes);
  return write_chunk(fd, type, staging, bytes);
}

void drain_buffer(Recorder& r, Buffer& b, char* staging) noexcept {
  // flushed before committed: recycling resets committed first, so a stale
  // pair can only look empty, never like a range to write.
  b.readers.fetch_add(1);
  std::uint32_t f = b.flushed.load();
  const std::uint32_t c = b.committed.load();
  if (c <= f || !b.flushed.compare_exchange_strong(f, c)) {
    b.readers.fetch_sub(1);
    return;
  }
  const std::uint32_t count = c - f;
  char* payload = staging + sizeof(gdtrace::ChunkHeader);
  std::memcpy(payload, &b.tid, 4);
  std::memcpy(payload + 4, &count, 4);
  std::memcpy(payload + 8, b.events + f, std::size_t{count} * sizeof(gdtrace::RawEvent));
  b.readers.fetch_sub(1);
  write_chunk(r.fd, gdtrace::ChunkType::Events, staging, 8 + count * sizeof(gdtrace::RawEvent));
  r.events_written.fetch_add(count, std::memory_order_relaxed);
}

void write_own_buffer(Recorder& r, Buffer& b) noexcept {
  std::uint32_t f = b.flushed.load();
  const std::uint32_t c = b.committed.load(std::memory_order_relaxed);
  if (c > f && b.flushed.compare_exchange_strong(f, c)) {
    // No copy: header, tid/count and the events straight from the buffer.
    const std::uint32_t count = c - f;
    const std::uint32_t head[2] = {b.tid, count};
    const std::uint32_t bytes = 8 + count * static_cast<std::uint32_t>(sizeof(gdtrace::RawEvent));
    const std::uint32_t crc = gdtrace::checksum(b.events + f, bytes - 8, gdtrace::checksum(head, 8));
    const gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(gdtrace::ChunkType::Events), 0, bytes, crc};
    iovec iov[3] = {{const_cast<gdtrace::ChunkHeader*>(&h), sizeof h},
                    {const_cast<std::uint32_t*>(head), 8},
                    {b.events + f, bytes - 8u}};
    std::size_t total = sizeof h + bytes;
    ssize_t w = ::writev(r.fd, iov, 3);
    if (w >= 0 && static_cast<std::size_t>(w) < total) {
      // Rare short write: finish the rest from a contiguous copy.
      std::vector<char> all(total);
      std::memcpy(all.data(), &h, sizeof h);
      std::memcpy(all.data() + sizeof h, head, 8);
      std::memcpy(all.data() + sizeof h + 8, b.events + f, bytes - 8u);
      write_all(r.fd, all.data() + w, total - static_cast<std::size_t>(w));
    }
    r.events_written.fetch_add(count, std::memory_order_relaxed);
  }
}

void retire_full_buffer(Recorder& r, Buffer& b) noexcept {
  if (r.retired_pending.fetch_add(1) >= kMaxPendingBuffers || !r.options.writer_thread) write_own_buffer(r, b);
  b.state.store(BufferState::Retired, std::memory_order_release);
  wake_writer(r);
}

void drain_all(Recorder& r, char* staging) noexcept {
  r.writes_in_flight.fetch_add(1, std::memory_order_acq_rel);
  for (std::uint32_t i = 0; i < r.pool_size; ++i) drain_buffer(r, r.pool[i], staging);
  const std::uint64_t dropped = r.dropped.load(std::memory_order_relaxed);
  if (r.dropped_written.exchange(dropped) != dropped)
    write_small_chunk(r.fd, gdtrace::ChunkType::Dropped, &dropped, sizeof dropped);
  r.writes_in_flight.fetch_sub(1, std::memory_order_acq_rel);
}

gdtrace::RawEvent* begin_event_slow(Buffer*& out) noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return nullptr;
  Buffer* b = t_buffer;
  if (b == nullptr || t_generation != r->generation) {
    b = t_buffer = acquire_buffer(*r);
    t_generation = r->generation;
  } else if (b->committed.load(std::memory_order_relaxed) == r->capacity) {
    retire_full_buffer(*r, *b);
    b = t_buffer = acquire_buffer(*r);
  }
  if (b == nullptr) {
    r->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  out = b;
  return &b->events[b->committed.load(std::memory_order_relaxed)];
}

}  // namespace detail

using namespace detail;

namespace {
void stop_recording(bool close_file) noexcept;
}  // namespace

bool start(const char* path_pattern, const Options& options) noexcept {
  if (path_pattern == nullptr || *path_pattern == '\0') return false;
  std::lock_guard<std::mutex> control(g_control_mutex);
  if (g_recorder.load() != nullptr) return false;
  try {
    auto* r = new Recorder();
    r->options = options;
    r->capacity = options.buffer_events < 16 ? 16 : options.buffer_events;
    r->pool_size = options.buffer_count < 2 ? 2 : options.buffer_count;
    if (r->options.flush_interval_ms == 0) r->options.flush_interval_ms = 1;
    expand_pattern(path_pattern, r->path, sizeof r->path);
    r->fd = ::open(r->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (r->fd < 0) {
      std::fprintf(stderr, "gpudiag: cannot create trace file %s: %s\n", r->path, std::strerror(errno));
      delete r;
      return false;
    }
    r->pid = static_cast<std::uint64_t>(getpid());
    static std::uint64_t generations = 0;
    r->generation = ++generations;
    auto* storage = new gdtrace::RawEvent[std::size_t{r->capacity} * r->pool_size];
    // Touch the pool now, so page faults do not land on recording threads.
    std::memset(static_cast<void*>(storage), 0, std::size_t{r->capacity} * r->pool_size * sizeof(gdtrace::RawEvent));
    r->pool = new Buffer[r->pool_size];
    for (std::uint32_t i = 0; i < r->pool_size; ++i) {
      r->pool[i].events = storage + std::size_t{i} * r->capacity;
      r->free_list.push_back(&r->pool[i]);
    }
    const std::size_t staging = sizeof(gdtrace::ChunkHeader) + 8 + std::size_t{r->capacity} * sizeof(gdtrace::RawEvent);
    r->writer_staging.resize(staging);
    r->crash_staging = new char[staging];

    gdtrace::FileHeader header{};
    std::memcpy(header.magic, gdtrace::kMagic, sizeof header.magic);
    header.version = gdtrace::kVersion;
    header.header_size = sizeof header;
    header.pid = r->pid;
    header.start_ns = now_ns();
    if (!write_all(r->fd, reinterpret_cast<const char*>(&header), sizeof header)) {
      ::close(r->fd);
      return false;
    }
    reset_interning();
    g_last_options = options;
    std::snprintf(g_last_pattern, sizeof g_last_pattern, "%s", path_pattern);
    g_recorder.store(r, std::memory_order_release);
    write_process_info(*r);
    install_crash_handlers(*r);
    if (options.writer_thread) r->writer = std::thread(writer_loop, r);
    static bool registered = false;
    if (!registered) {
      registered = true;
      std::atexit([] { stop_recording(false); });
      pthread_atfork(nullptr, nullptr, after_fork_in_child);
    }
    g_enabled.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    return false;
  }
}

namespace {
void stop_recording(bool close_file) noexcept {
  std::lock_guard<std::mutex> control(g_control_mutex);
  Recorder* r = g_recorder.load();
  if (r == nullptr || r->pid != static_cast<std::uint64_t>(getpid())) return;
  g_enabled.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(r->wake_mutex);
    r->stop_requested = true;
    r->wake.notify_one();
  }
  if (r->writer.joinable()) r->writer.join();
  drain_all(*r, r->writer_staging.data());
  const std::uint64_t written = r->events_written.load();
  write_small_chunk(r->fd, gdtrace::ChunkType::End, &written, sizeof written);
  g_recorder.store(nullptr, std::memory_order_release);
  // At exit other threads may still be inside a write to this descriptor;
  // closing it could let a later open() reuse the number. The kernel closes it.
  if (close_file) {
    ::close(r->fd);
    r->fd = -1;
  }
}
}  // namespace

void stop() noexcept { stop_recording(true); }

void flush() noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return;
  std::lock_guard<std::mutex> control(g_control_mutex);
  std::vector<char> staging(r->writer_staging.size());
  drain_all(*r, staging.data());
  recycle_drained(*r);
}

const char* trace_path() noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  return r ? r->path : "";
}

void add_dropped(std::uint64_t n) noexcept {
  if (Recorder* r = g_recorder.load(std::memory_order_acquire)) r->dropped.fetch_add(n, std::memory_order_relaxed);
}

namespace {
// Activation from the environment, before main() of the traced program.
__attribute__((constructor)) void start_from_environment() {
  const char* pattern = std::getenv("GPUDIAG_TRACE");
  if (pattern == nullptr || *pattern == '\0') return;
  Options options;
  if (const char* s = std::getenv("GPUDIAG_TRACE_STACKS")) options.stacks = std::strcmp(s, "off") != 0;
  if (const char* s = std::getenv("GPUDIAG_TRACE_BUFFER_EVENTS")) options.buffer_events = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  if (const char* s = std::getenv("GPUDIAG_TRACE_BUFFERS")) options.buffer_count = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  start(pattern, options);
}
}  // namespace

}  // namespace gpudiag::rec
