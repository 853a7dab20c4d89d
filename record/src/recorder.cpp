// The recorder: buffer pool, lock-free per-thread append, writer thread,
// start/stop/flush and activation from GPUDIAG_TRACE.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include "gpudiag/descriptors.h"
#include "recorder_state.h"

namespace gpudiag::rec {
namespace detail {

std::atomic<bool> g_enabled{false};
std::atomic<Recorder*> g_recorder{nullptr};
std::atomic<std::uint64_t> g_generation{0};
constinit thread_local Cursor t_cursor{};

namespace {

// Recorders that stopped, or that a forked child abandoned: never freed, as
// threads may still hold one of their buffers, but kept here, so they are
// reachable (and a leak checker sees them as such).
void retire(Recorder* r) noexcept {
  static auto* retired = new std::vector<Recorder*>();
  try {
    retired->push_back(r);
  } catch (...) {  // out of memory: unreachable then, and still never freed
  }
}

// The calling thread's last completed half that may not be written yet:
// events [0, upto) of `buffer`, while the buffer still has lease `lease`.
struct PendingHalf {
  Buffer* buffer = nullptr;
  std::uint32_t lease = 0;
  std::uint32_t upto = 0;
};
thread_local PendingHalf t_pending;

std::mutex g_control_mutex;  // start/stop/flush
pthread_key_t g_thread_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void wake_writer(Recorder& r) {
  r.work_pending.store(true);
  if (!r.writer_asleep.load()) return;  // it will see the work before it sleeps
  std::lock_guard<std::mutex> lock(r.wake_mutex);
  r.wake.notify_one();
}

bool is_written(const Buffer& b, const PendingHalf& p) noexcept {
  if (b.lease.load(std::memory_order_acquire) != p.lease) return true;  // recycled, hence written
  return b.flushed.load(std::memory_order_acquire) >= p.upto && b.readers.load(std::memory_order_acquire) == 0;
}

// Returns once events [0, p.upto) of p.buffer are written to the file (the
// page cache survives the process). The writer thread was woken when the
// half was completed and normally writes it while the owner fills its next
// half. When it has not, the owner sleeps until the writer's next round
// rather than spinning: a spinning owner would take the CPU the writer needs,
// and its own CPU time is what tracing costs the traced program. If the
// writer has not even claimed the half after a few milliseconds (starved of
// CPU), the owner writes it itself.
void ensure_written(Recorder& r, const PendingHalf& p) noexcept {
  Buffer& b = *p.buffer;
  if (is_written(b, p)) return;
  if (!r.options.writer_thread) {
    drain_buffer(r, b);
    while (!is_written(b, p)) sched_yield();  // another drainer's write is finishing
    return;
  }
  std::unique_lock<std::mutex> lock(r.wake_mutex);
  r.owners_waiting.fetch_add(1);
  for (int round = 0; !is_written(b, p); ++round) {
    if (round == 4 && b.flushed.load(std::memory_order_acquire) < p.upto) {
      lock.unlock();
      drain_buffer(r, b);
      lock.lock();
      continue;
    }
    r.written.wait_for(lock, std::chrono::milliseconds(1));
  }
  r.owners_waiting.fetch_sub(1);
}

// The calling thread completed the half of b that ends at event n.
void complete_half(Recorder& r, Buffer& b, std::uint32_t n) noexcept {
  if (t_pending.buffer != nullptr) ensure_written(r, t_pending);
  t_pending = {&b, b.lease.load(std::memory_order_relaxed), n};
  if (r.options.writer_thread)
    wake_writer(r);
  else
    drain_buffer(r, b);
}

// Runs when a thread that recorded exits: it writes what it recorded (a
// thread's exit is rare, and nothing it recorded then waits on the writer)
// and leaves its buffer to be recycled.
// The half it completed last may still wait for the writer thread, in the
// buffer it filled before this one: it is written too, or a SIGKILL soon
// after would lose it while keeping the newer events of the current buffer.
void on_thread_exit(void*) {
  Buffer* b = t_cursor.buffer;
  const std::uint64_t generation = t_cursor.generation;
  const PendingHalf pending = t_pending;
  t_cursor = {};
  t_pending = {};
  Recorder* r = g_recorder.load();
  const bool current = r != nullptr && generation == r->generation;
  if (current && pending.buffer != nullptr) ensure_written(*r, pending);
  if (b == nullptr) return;
  if (current) drain_buffer(*r, *b);
  b->state.store(BufferState::Retired, std::memory_order_release);
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
  b->acquired.store(r.acquisitions.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
    b.lease.fetch_add(1, std::memory_order_acq_rel);  // before the reset: see ensure_written
    for (int spin = 0; b.readers.load() != 0 && spin < 100000; ++spin) std::this_thread::yield();
    b.committed.store(0);
    b.flushed.store(0);
    std::lock_guard<std::mutex> lock(r.free_mutex);
    r.free_list.push_back(&b);
  }
}

// A bounded recording's ring: a new segment when the current one is full,
// and the oldest dropped when over the bound, once no write is in flight (a
// thread between reading the events descriptor and writing may be about to
// write into the oldest segment; it is not read and removed under it).
void maintain_ring(Recorder& r, bool stopping = false) noexcept {
  if (r.ring == nullptr || r.write_error.load() != 0) return;
  // Read before waiting for quiet: a write that begins after that writes
  // to this segment or a newer one.
  const std::uint32_t in_use = r.ring->in_use_seq();
  // A thread writes a half buffer in well under a millisecond; the writer
  // thread, not the program, waits for it.
  bool quiet = r.writes_in_flight.load(std::memory_order_acquire) == 0;
  for (int wait = 0; wait < 200 && !quiet; ++wait) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    quiet = r.writes_in_flight.load(std::memory_order_acquire) == 0;
  }
  // A ring that cannot rotate or drop cannot keep its bound: recording stops.
  try {
    if (!r.ring->maintain(quiet, stopping && quiet, in_use)) stop_recording_after(r, errno != 0 ? errno : EIO);
  } catch (const std::bad_alloc&) {
    stop_recording_after(r, ENOMEM);
  }
}

constexpr std::uint64_t kCommitMargin = 1'000'000;  // ns between an event's timestamp and its commit, at most

// Writes completed halves as soon as an owner reports one, and everything
// recorded so far every flush_interval_ms.
void writer_loop(Recorder* r) {
  std::optional<gdtrace::Deflater> deflater;
  if (r->options.compress) deflater.emplace(r->capacity);
  std::unique_lock<std::mutex> lock(r->wake_mutex);
  while (!r->stop_requested) {
    r->writer_asleep.store(true);
    r->wake.wait_for(lock, std::chrono::milliseconds(r->options.flush_interval_ms),
                     [r] { return r->work_pending.load() || r->stop_requested; });
    r->writer_asleep.store(false);
    r->work_pending.store(false);
    lock.unlock();
    // What the pass writes holds every event committed before it began; one
    // timestamped up to a millisecond earlier may still have been on its
    // way into its buffer.
    const std::uint64_t began = now_ns();
    const std::uint64_t whole_until = began > kCommitMargin ? began - kCommitMargin : 0;
    const std::uint64_t written = r->events_written.load(std::memory_order_relaxed);
    drain_all(*r, deflater ? &*deflater : nullptr);
    if (r->events_written.load(std::memory_order_relaxed) != written) {
      write_small_chunk(r->fd, gdtrace::ChunkType::Drained, &whole_until, sizeof whole_until);
      maintain_ring(*r);
    }
    recycle_drained(*r);
    lock.lock();
    if (r->owners_waiting.load() != 0) r->written.notify_all();
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

// Why this process records nothing: on its stderr, and appended to the file
// GPUDIAG_TRACE_ERRORS names (gpudiag trace creates it, and reads it after
// the run to say why a trace is missing). That file is only appended to,
// never created: a process that outlives the run finds it gone.
void report_start_failure(const char* what, const char* subject, int error) noexcept {
  char line[4608];
  const int n = std::snprintf(line, sizeof line, "%s %s: %s\n", what, subject, std::strerror(error));
  if (n <= 0) return;
  const std::size_t size = static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n) : sizeof line - 1;
  std::fprintf(stderr, "gpudiag: %s", line);
  const char* errors = std::getenv("GPUDIAG_TRACE_ERRORS");
  if (errors == nullptr || *errors == '\0') return;
  const int fd = open_above_stdio(errors, O_WRONLY | O_APPEND);
  if (fd < 0) return;
  write_all(fd, line, size);
  ::close(fd);
}

Options g_last_options;
char g_last_pattern[4096] = {};

// The recorder's two global locks are held across fork() (control, then
// interning: no path takes them the other way round), so that the child does
// not inherit one held by a thread that does not exist in it.
void before_fork() {
  g_control_mutex.lock();
  interning_before_fork();
}

void after_fork_in_parent() {
  interning_after_fork_in_parent();
  g_control_mutex.unlock();
}

void after_fork_in_child() {
  new (&g_control_mutex) std::mutex();
  interning_after_fork_in_child();
  // The writer thread does not exist in the child. A forked child gets its
  // own trace when the pattern names files by pid; otherwise it stops.
  Recorder* r = g_recorder.load();
  if (r == nullptr) return;
  g_enabled.store(false);
  g_generation.store(0);
  g_recorder.store(nullptr);
  // The parent's segment files, removed or not, are not the child's to keep open.
  if (r->ring != nullptr) r->ring->close_files_after_fork();
  retire(r);  // the parent's state is abandoned, not freed
  if (std::strstr(g_last_pattern, "%p") != nullptr) start(g_last_pattern, g_last_options);
}

}  // namespace

std::uint32_t current_tid() noexcept { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

namespace {
void point_cursor_at(Cursor& c, Buffer* b, const Recorder& r) noexcept {
  c.buffer = b;
  c.events = b != nullptr ? b->events : nullptr;
  c.n = 0;
  c.limit = b != nullptr ? r.capacity / 2 : 0;
  c.generation = r.generation;
}
}  // namespace

gdtrace::RawEvent* begin_event_slow(Cursor& c) noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return nullptr;
  if (c.buffer == nullptr || c.generation != r->generation) {
    if (c.generation != r->generation) t_pending = {};
    point_cursor_at(c, acquire_buffer(*r), *r);
  } else if (c.n == c.limit) {
    Buffer& b = *c.buffer;
    complete_half(*r, b, c.n);
    if (c.n == r->capacity) {
      b.state.store(BufferState::Retired, std::memory_order_release);
      point_cursor_at(c, acquire_buffer(*r), *r);
    } else {
      c.limit = r->capacity;
    }
  }
  if (c.buffer == nullptr) {
    r->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return &c.events[c.n];
}

}  // namespace detail

using namespace detail;

namespace {
// exit_status: 0..255 when the process is exiting with it (an Exit chunk
// says so before the End chunk), -1 when not known.
void stop_recording(bool close_file, int exit_status = -1) noexcept;
}  // namespace

bool start(const char* path_pattern, const Options& options) noexcept {
  if (path_pattern == nullptr || *path_pattern == '\0') return false;
  std::lock_guard<std::mutex> control(g_control_mutex);
  if (g_recorder.load() != nullptr) return false;
  try {
    auto* r = new Recorder();
    r->options = options;
    r->capacity = options.buffer_events < 16 ? 16 : options.buffer_events & ~1u;  // two equal halves
    r->pool_size = options.buffer_count < 2 ? 2 : options.buffer_count;
    if (r->options.flush_interval_ms == 0) r->options.flush_interval_ms = 1;
    expand_pattern(path_pattern, r->path, sizeof r->path);
    r->fd = open_above_stdio(r->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (r->fd < 0) {
      report_start_failure("cannot create trace file", r->path, errno);
      delete r;
      return false;
    }
    r->pid = static_cast<std::uint64_t>(getpid());
    static std::uint64_t generations = 0;
    r->generation = ++generations;
    // Pages of the pool are faulted in when a thread first fills them: a
    // program with one recording thread touches two or three buffers, and
    // touching all of them up front cost ~10 ms of CPU at every start.
    const std::size_t pool_bytes = std::size_t{r->capacity} * r->pool_size * sizeof(gdtrace::RawEvent);
    void* storage_map = ::mmap(nullptr, pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (storage_map == MAP_FAILED) {
      const int error = errno;
      char what[96];
      std::snprintf(what, sizeof what, "cannot map a %zu-byte trace buffer pool for", pool_bytes);
      report_start_failure(what, r->path, error);
      ::close(r->fd);
      delete r;
      return false;
    }
    auto* storage = static_cast<gdtrace::RawEvent*>(storage_map);
    r->pool = new Buffer[r->pool_size];
    for (std::uint32_t i = 0; i < r->pool_size; ++i) {
      r->pool[i].events = storage + std::size_t{i} * r->capacity;
      r->free_list.push_back(&r->pool[i]);
    }

    gdtrace::FileHeader header{};
    std::memcpy(header.magic, gdtrace::kMagic, sizeof header.magic);
    header.version = gdtrace::kSingleFileVersion;
    header.header_size = sizeof header;
    header.pid = r->pid;
    header.start_ns = now_ns();
    if (!write_all(r->fd, reinterpret_cast<const char*>(&header), sizeof header)) {
      report_start_failure("cannot write trace file", r->path, errno);
      ::close(r->fd);
      ::munmap(storage_map, pool_bytes);
      delete[] r->pool;
      delete r;
      return false;
    }
    if (options.max_size != 0) r->ring = new gdtrace::SegmentRing(r->fd, r->path, header, options.max_size);
    g_last_options = options;
    std::snprintf(g_last_pattern, sizeof g_last_pattern, "%s", path_pattern);
    g_recorder.store(r, std::memory_order_release);
    g_generation.store(r->generation, std::memory_order_release);
    write_process_info(*r);
    write_identity(*r);
    write_loaded_modules(*r);
    install_crash_handlers(*r);
    if (options.writer_thread) r->writer = std::thread(writer_loop, r);
    static bool registered = false;
    if (!registered) {
      registered = true;
      // on_exit, not atexit: the handler is told the status the process
      // exits with. The library is never unloaded (linked -z nodelete), so
      // the handler stays there to be called.
      on_exit([](int status, void*) { stop_recording(false, status & 0xff); }, nullptr);
      pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    }
    g_enabled.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    return false;
  }
}

namespace {
void stop_recording(bool close_file, int exit_status) noexcept {
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
  drain_all(*r);
  maintain_ring(*r, true);  // the last events may have passed the bound
  // A recording that stopped when a write failed did not end here: no End,
  // so that readers judge it only as far as its last Drained marker.
  const std::uint64_t written = r->events_written.load();
  if (r->write_error.load() == 0) {
    if (exit_status >= 0) write_exit_status(*r, exit_status);
    write_small_chunk(r->fd, gdtrace::ChunkType::End, &written, sizeof written);
  }
  g_generation.store(0, std::memory_order_release);
  g_recorder.store(nullptr, std::memory_order_release);
  retire(r);
  // At exit other threads may still be inside a write to this descriptor;
  // closing it could let a later open() reuse the number. The kernel closes it.
  if (r->ring != nullptr && !close_file) r->ring->remove_unused_next();
  if (close_file) {
    if (r->ring != nullptr) r->ring->close_files();
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
  drain_all(*r);
  maintain_ring(*r);
  recycle_drained(*r);
}

const char* trace_path() noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  return r ? r->path : "";
}

namespace {
std::atomic<bool> g_gpu_work_traced{false};
}  // namespace

void set_gpu_work_traced() noexcept { g_gpu_work_traced.store(true, std::memory_order_release); }
bool gpu_work_traced() noexcept { return g_gpu_work_traced.load(std::memory_order_acquire); }

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
  if (const char* s = std::getenv("GPUDIAG_TRACE_COMPRESS")) options.compress = std::strcmp(s, "off") != 0;
  if (const char* s = std::getenv("GPUDIAG_TRACE_BUFFER_EVENTS")) options.buffer_events = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  if (const char* s = std::getenv("GPUDIAG_TRACE_BUFFERS")) options.buffer_count = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  if (const char* s = std::getenv("GPUDIAG_TRACE_MAX_SIZE"); s != nullptr && *s != '\0') {
    const auto bytes = gdtrace::parse_size(s);
    if (!bytes)
      std::fprintf(stderr, "gpudiag: GPUDIAG_TRACE_MAX_SIZE=%s is not a size (e.g. 64M, 2G): the trace is not bounded\n", s);
    else if (*bytes < gdtrace::SegmentRing::kMinBytes)
      std::fprintf(stderr, "gpudiag: GPUDIAG_TRACE_MAX_SIZE=%s is below the smallest bound: the trace is bounded at 1M\n", s);
    options.max_size = bytes ? std::max(*bytes, gdtrace::SegmentRing::kMinBytes) : 0;
  }
  start(pattern, options);
}
}  // namespace

}  // namespace gpudiag::rec
