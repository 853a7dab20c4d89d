// A traced program that records N allocation events (addresses 1..N/2 from
// the main thread, N/2+1..N from a worker) and then dies the way argv[1]
// says. crash_test.cpp runs it and checks what reached the trace.
// "altstack": the program set up its own signal stack before tracing started,
// and must still have it. "kill": the worker has exited, main raises SIGKILL; "kill-live": the
// worker is still alive (blocked) when main raises SIGKILL. Both record with
// the writer thread's periodic flush pushed out of reach, so only what the
// recorder writes as buffers fill (or threads exit) can reach the file.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "gpudiag/record.h"

namespace rec = gpudiag::rec;

namespace {

void record_range(std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t a = from; a <= to; ++a)
    rec::record(rec::AllocEvent{.addr = a, .bytes = 8, .kind = gpudiag::MemKind::Device, .device = 0});
}

[[noreturn]] void bus_error() {
  // Touching a page of a mapping past the end of its (empty) file raises SIGBUS.
  char path[] = "/tmp/gdtrace-busXXXXXX";
  int fd = mkstemp(path);
  unlink(path);
  auto* p = static_cast<volatile char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  p[0] = 1;
  std::abort();  // not reached
}

// A program's own SIGSEGV handler, installed before tracing starts: it must
// still see the faulting address.
void own_segv_handler(int, siginfo_t* info, void*) {
  _exit(info->si_addr == reinterpret_cast<void*>(0x10) ? 42 : 43);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s segv|handler|altstack|abort|bus|_exit|exit|throw|kill|kill-live|none TRACE N\n", argv[0]);
    return 2;
  }
  const std::string how = argv[1];
  const std::uint64_t n = std::strtoull(argv[3], nullptr, 10);
  if (how == "handler") {
    struct sigaction sa {};
    sa.sa_sigaction = own_segv_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
  }
  static char own_stack[32 * 1024];
  if (how == "altstack") {
    stack_t ss{};
    ss.ss_sp = own_stack;
    ss.ss_size = sizeof own_stack;
    sigaltstack(&ss, nullptr);
  }
  rec::Options options;
  options.buffer_events = 256;
  options.buffer_count = 128;  // 32768 events: room for all, so none is dropped
  const bool kill = how == "kill" || how == "kill-live";
  if (kill) options.flush_interval_ms = 3'600'000;
  if (!rec::start(argv[2], options)) return 3;
  // Half from a worker thread (still alive at the death, except for "kill").
  // For "kill" the worker records last, so that nothing the main thread does
  // afterwards can make the writer thread notice what the worker left behind.
  std::atomic<bool> worker_done{false};
  if (how == "kill") record_range(1, n / 2);
  std::thread worker([&] {
    record_range(n / 2 + 1, n);
    worker_done.store(true);
    if (how == "kill-live")
      for (;;) pause();
  });
  if (how != "kill") record_range(1, n / 2);
  if (how == "kill-live") {
    while (!worker_done.load()) std::this_thread::yield();
    raise(SIGKILL);
  }
  worker.join();

  if (how == "altstack") {
    stack_t ss{};
    sigaltstack(nullptr, &ss);
    if (ss.ss_sp != own_stack || ss.ss_size != sizeof own_stack) return 44;
  }
  if (how == "segv" || how == "handler") {
    volatile std::uintptr_t where = how == "segv" ? 0 : 0x10;  // opaque to the optimizer
    *reinterpret_cast<volatile int*>(where) = 1;
  } else if (how == "abort") {
    std::abort();
  } else if (how == "bus") {
    bus_error();
  } else if (how == "_exit") {
    _exit(7);
  } else if (how == "exit") {
    std::exit(5);
  } else if (how == "throw") {
    throw std::runtime_error("uncaught on purpose");
  } else if (how == "kill") {
    raise(SIGKILL);
  }
  return 0;
}
