#include "emu/emu_fault.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "emu/emu_memory.h"

#ifdef GDRT_WITH_RECORD
#include "gpudiag/fault_filter.h"
#endif

namespace gdrt::emu {
namespace {

constexpr int kMaxDevices = 16;
struct Watched {
  std::atomic<const DeviceMemory*> memory{nullptr};
  const char* name = nullptr;
};
Watched g_watched[kMaxDevices];
struct sigaction g_previous {};

// Async-signal-safe output: write(2) and hand-made numbers.
void put(const char* s) { (void)!write(2, s, std::strlen(s)); }
void put_number(std::uint64_t v, int base) {
  char buf[24];
  int i = sizeof buf;
  do {
    buf[--i] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0);
  if (base == 16) buf[--i] = 'x', buf[--i] = '0';
  (void)!write(2, buf + i, sizeof buf - i);
}

void report(const DeviceMemory& memory, const char* name, std::uintptr_t address) {
  put("\ngdrt: error GD001: the host touched device memory of ");
  put(name);
  put(" at ");
  put_number(address, 16);
  const DeviceMemory::Record* r = memory.record_at(address);
  if (r != nullptr) {
    put(", ");
    put_number(address - r->start, 10);
    put(" bytes into an allocation of ");
    put_number(r->bytes, 10);
    put(" bytes");
  } else {
    put(", in no live allocation (freed, or never allocated)");
  }
  put(".\nThe host cannot dereference device memory (on a GPU this is the same segmentation fault): copy the "
      "tensor to the host first with .to(cpu_device()) or to_vector(), or keep the work on the device.\n");
  if (r != nullptr && r->frames > 0) {
    put("The allocation was made at:\n");
    backtrace_symbols_fd(r->stack, r->frames, 2);
  }
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const Watched* hit = nullptr;
  for (const Watched& w : g_watched) {
    const DeviceMemory* m = w.memory.load(std::memory_order_acquire);
    if (m != nullptr && address >= m->user_begin() && address < m->user_end()) hit = &w;
  }
  if (hit != nullptr) {
    const int saved_errno = errno;
    report(*hit->memory.load(), hit->name, address);
#ifdef GDRT_WITH_RECORD
    // Recorded here, whatever handler comes next: a handler installed before
    // ours (a sanitizer's, the program's) ends the process without the
    // recorder's handler knowing the fault is fatal.
    gpudiag::rec::record_fatal_fault(sig, info, context);
#endif
    errno = saved_errno;
  }
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  // The default action: returning re-runs the access, which now kills the process.
  signal(SIGSEGV, SIG_DFL);
}

}  // namespace

void report_host_faults(const DeviceMemory& memory, const char* name) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
  });
  static std::mutex adding;
  std::lock_guard lock(adding);
  for (Watched& w : g_watched)
    if (w.memory.load() == nullptr) {
      w.name = name;
      w.memory.store(&memory, std::memory_order_release);
      return;
    }
}

}  // namespace gdrt::emu
