// emu: a GPU emulated on the CPU, with the semantics that make GPU bugs
// happen. Device memory the host cannot touch (emu_memory.h), streams that
// run work later and in CUDA's order (emu_streams.h), pinned and pageable
// host memory copied as CUDA copies them (measured on an H100: an async copy
// with pageable memory returns only when done; with pinned memory at once,
// and reading its destination early gives stale data), errors that stick
// as CUDA's do, and the cpu kernels doing the arithmetic on the device's
// private view.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/hooks.h"
#include "core/registration.h"
#include "cpu/cpu_kernels.h"
#include "emu/emu_control.h"
#include "emu/emu_fault.h"
#include "emu/emu_memory.h"
#include "emu/emu_streams.h"
#include "gdrt/error.h"

namespace gdrt::emu {
namespace {

std::atomic<bool> g_in_forked_child{false};

// A copy that returns only when done (one with pageable memory) returns no
// sooner than a 4-byte device-to-host cudaMemcpy did on an H100 (CUDA 13.0):
// the round trip that makes reading device values one at a time slow
// (GD005). emu's own cost of the round trip counts towards it.
constexpr std::chrono::nanoseconds kCopyLatency{9000};

// Spins: a sleep would oversleep a few microseconds many times over.
void wait_until(std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
  }
}

// Every emu backend, for abandoning their queues at process exit.
std::mutex g_live_mutex;
std::vector<Streams*> g_live_streams;

// exit() runs the calling thread's thread_local destructors before any
// static destructor: when that thread is the main one, the process is
// ending, and the streams stop before the kernels' libraries (oneDNN's JIT
// code) are torn down under them.
struct ProcessExit {
  ~ProcessExit() {
    if (gettid() != getpid()) return;
    std::lock_guard lock(g_live_mutex);
    for (Streams* s : g_live_streams) s->abandon();
  }
};

void watch_process_exit() {
  thread_local ProcessExit watch;
  (void)watch;
}

std::size_t configured_capacity() {
  const char* text = std::getenv("GDRT_EMU_MEMORY");
  if (!text || !*text) return std::size_t{4} << 30;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  std::size_t scale = 1;
  const std::string unit = end ? end : "";
  if (unit == "K" || unit == "KiB" || unit == "k") scale = std::size_t{1} << 10;
  else if (unit == "M" || unit == "MiB") scale = std::size_t{1} << 20;
  else if (unit == "G" || unit == "GiB") scale = std::size_t{1} << 30;
  else if (!unit.empty() && unit != "B")
    throw Error(std::string("GDRT_EMU_MEMORY=\"") + text + "\": expected bytes, or a number with K, M or G (e.g. 4G)");
  if (!(value > 0)) throw Error(std::string("GDRT_EMU_MEMORY=\"") + text + "\": the capacity must be positive");
  return static_cast<std::size_t>(value * static_cast<double>(scale));
}

bool configured_checked() {
  const char* text = std::getenv("GDRT_EMU_CHECKED");
  return text && *text && std::strcmp(text, "0") != 0;
}

class EmuBackend final : public Backend {
 public:
  explicit EmuBackend(int index)
      : device_{DeviceKind::emu, index},
        name_(device_.str()),
        streams_(cpu::adopt_kernel_thread),
        memory_(configured_capacity(), configured_checked(), streams_, name_) {
    static std::once_flag fork_hook;
    std::call_once(fork_hook, [] { pthread_atfork(nullptr, nullptr, [] { g_in_forked_child = true; }); });
    report_host_faults(memory_, name_.c_str());
    std::lock_guard lock(g_live_mutex);
    g_live_streams.push_back(&streams_);
  }
  ~EmuBackend() override { streams_.synchronize_all(); }

  Device device() const override { return device_; }

  void* allocate(std::size_t bytes, StreamId stream) override {
    usable();
    return memory_.allocate(bytes, stream);
  }
  void deallocate(void* ptr, std::size_t, StreamId stream, const std::vector<StreamId>& used_on) override {
    // Frees run during unwinding and exit too: after a failure they are dropped, as CUDA drops them.
    if (g_in_forked_child) return;
    memory_.free(ptr, stream, used_on);
  }

  // Page-locked host memory, as cudaHostAlloc. A freed buffer is reused
  // only once the work queued before its free is done, as PyTorch's
  // caching host allocator does, so an async copy still reading it is safe.
  void* allocate_pinned(std::size_t bytes) override {
    usable();
    std::lock_guard lock(pinned_mutex_);
    for (auto it = pinned_cache_.begin(); it != pinned_cache_.end(); ++it) {
      if (it->bytes < bytes || it->bytes > 2 * bytes) continue;
      bool done = true;
      for (const StreamPoint& p : it->after) done = done && streams_.done(p);
      if (!done) continue;
      void* p = it->ptr;
      pinned_cache_.erase(it);
      return p;
    }
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) throw Error("GD008", name_ + ": pinned host allocation of " + std::to_string(bytes) + " bytes failed");
    pinned_.emplace(reinterpret_cast<std::uintptr_t>(p), bytes);
    return p;
  }
  void deallocate_pinned(void* ptr, std::size_t) override {
    if (g_in_forked_child) return;
    std::lock_guard lock(pinned_mutex_);
    const auto it = pinned_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == pinned_.end()) return;
    pinned_cache_.push_back({ptr, it->second, streams_.now_all()});
  }

  void copy(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes, StreamId stream,
            std::uint64_t trace_id) override {
    usable();
    const Side to = side(dst, bytes), from = side(src, bytes);
    void* d = to == Side::device ? memory_.device_view(dst) : dst;
    const void* s = from == Side::device ? memory_.device_view(src) : src;
    // Pageable memory cannot be read by the copy engine later: the call
    // returns only when the copy (and what was queued before it) is done.
    const bool blocking = to == Side::pageable || from == Side::pageable;
    const auto called = blocking ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    // Recorded when it runs, with the kinds of memory it really touched.
    auto run = [this, d, s, dst, src, bytes, stream, trace_id, dk = memory_kind(to), sk = memory_kind(from)] {
      const auto start = trace_id ? hooks::now_ns() : 0;
      std::memcpy(d, s, bytes);
      if (trace_id) hooks::copy_ran(device_, trace_id, dst, dk, src, sk, bytes, start, hooks::now_ns(), stream);
    };
    if (to != Side::device && from != Side::device) return run();
    const StreamPoint point = streams_.enqueue(stream, run);
    if (blocking) {
      streams_.synchronize(point);
      streams_.check();
      wait_until(called + kCopyLatency);
    }
  }

  void launch(const KernelOp& op, StreamId stream, std::uint64_t launch_id) override {
    usable();
    KernelOp own = op;
    std::vector<BlockTag> tags;
    std::string illegal;
    for_each_buffer(own, [&](auto*& p, std::size_t bytes, Access) {
      if (!memory_.contains(p)) {
        // The launch succeeds; the kernel faults when it runs (error 700 at the next sync).
        if (illegal.empty()) illegal = describe_foreign(p);
        return;
      }
      if (memory_.checked()) tags.push_back(memory_.tag(p, bytes));
      p = static_cast<std::remove_reference_t<decltype(p)>>(memory_.device_view(p));
    });
    streams_.enqueue(stream, [this, own = std::move(own), tags = std::move(tags), illegal = std::move(illegal), stream,
                              launch_id] {
      const char* name = kernel_name(own);
      if (!illegal.empty())
        throw Error(std::string("an illegal memory access was encountered (CUDA error 700) in ") + name + ": " +
                    illegal);
      for (const BlockTag& t : tags)
        if (!memory_.usable_by(t, Streams::running())) {
          const std::string message = std::string("kernel ") + name + " on " + name_ + " stream " +
                                      std::to_string(stream) +
                                      " used memory that was freed after the kernel was queued and before it ran: "
                                      "the free did not wait for this stream (record_stream the tensor on it, or "
                                      "synchronise before dropping it)";
          hooks::finding("GD004", message);
          throw Error("GD004", message);
        }
      const auto start = hooks::recording() ? hooks::now_ns() : 0;
      kernels_.run(own);
      if (start) hooks::kernel(device_, name, start, hooks::now_ns(), stream, launch_id);
    });
  }

  StreamId create_stream(StreamFlags flags) override {
    usable();
    return streams_.create(flags);
  }
  void destroy_stream(StreamId stream) override {
    if (!g_in_forked_child) streams_.destroy(stream);
  }
  EventId record_event(StreamId stream) override {
    usable();
    std::lock_guard lock(events_mutex_);
    events_.emplace(next_event_, streams_.now(stream));
    return next_event_++;
  }
  void destroy_event(EventId event) override {
    std::lock_guard lock(events_mutex_);
    events_.erase(event);
  }
  void wait_event(StreamId stream, EventId event) override {
    usable();
    streams_.wait(stream, event_point(event));
  }
  void synchronize_event(EventId event) override {
    usable();
    streams_.synchronize(event_point(event));
    streams_.check();
  }
  void synchronize(StreamId stream) override {
    usable();
    streams_.synchronize(stream);
    streams_.check();
  }
  void synchronize_device() override {
    usable();
    streams_.synchronize_all();
    streams_.check();
  }
  bool host_accessible() const override { return false; }
  Streams& streams() { return streams_; }

 private:
  enum class Side { device, pinned, pageable };
  struct CachedPinned {
    void* ptr;
    std::size_t bytes;
    std::vector<StreamPoint> after;
  };

  void usable() const {
    watch_process_exit();
    if (g_in_forked_child)
      throw Error(name_ + ": initialization error (CUDA error 3): the device was initialised before fork(), and a "
                          "forked child cannot use it, as with CUDA. Create worker processes before using the "
                          "device, or start them with spawn (fork + exec).");
    streams_.check();
  }

  Side side(const void* p, std::size_t bytes) {
    if (memory_.contains(p)) {
      (void)memory_.tag(p, bytes);  // an invalid device pointer is refused here, as cudaMemcpy refuses it
      return Side::device;
    }
    std::lock_guard lock(pinned_mutex_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = pinned_.upper_bound(a);
    if (it != pinned_.begin() && a + bytes <= std::prev(it)->first + std::prev(it)->second) return Side::pinned;
    return Side::pageable;
  }

  static MemoryKind memory_kind(Side side) {
    return side == Side::device ? MemoryKind::device
           : side == Side::pinned ? MemoryKind::host_pinned
                                  : MemoryKind::host_pageable;
  }

  std::string describe_foreign(const void* p) const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%zx", reinterpret_cast<std::uintptr_t>(p));
    return std::string("it was given ") + buf + ", host memory rather than memory of " + name_ +
           " (a kernel cannot read host memory)";
  }

  StreamPoint event_point(EventId event) {
    std::lock_guard lock(events_mutex_);
    auto it = events_.find(event);
    if (it == events_.end()) throw Error(name_ + ": event " + std::to_string(event) + " was never recorded");
    return it->second;
  }

  Device device_;
  std::string name_;
  Streams streams_;
  DeviceMemory memory_;
  cpu::CpuKernels kernels_;
  std::mutex pinned_mutex_;
  std::map<std::uintptr_t, std::size_t> pinned_;  // start -> bytes
  std::vector<CachedPinned> pinned_cache_;
  std::mutex events_mutex_;
  std::map<EventId, StreamPoint> events_;
  EventId next_event_ = 1;
};

}  // namespace

StreamHold::StreamHold(const Device& device, StreamId stream) : gate_(std::make_shared<std::promise<void>>()) {
  auto* emu = dynamic_cast<EmuBackend*>(&backend(device));
  if (emu == nullptr) throw Error("StreamHold: " + device.str() + " is not an emu device");
  emu->streams().enqueue(stream, [opened = gate_->get_future().share()] { opened.wait(); });
}

void StreamHold::release() {
  if (released_) return;
  released_ = true;
  gate_->set_value();
}

}  // namespace gdrt::emu

namespace gdrt {

BackendRegistration emu_backend_registration() {
  return {DeviceKind::emu, [](int index) -> std::unique_ptr<Backend> { return std::make_unique<emu::EmuBackend>(index); }};
}

}  // namespace gdrt
