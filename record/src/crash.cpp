// Crash safety: when the traced process dies, what it recorded reaches the
// file first.
//   - fatal signals (SEGV, BUS, ABRT, FPE, ILL) and termination signals (INT,
//     TERM, HUP, QUIT): drain every buffer with write(2) only, then call the
//     handler the program had installed, or re-raise with the default action.
//     A fatal signal that will kill the process (no handler of the program's
//     comes after us) is itself recorded first, as a Crash chunk: signal,
//     si_code, fault address, thread and the stack from the faulting
//     instruction, so the report can say what the program died of;
//   - a SIGSEGV is first offered to the fault filter (gpudiag/fault_filter.h):
//     the CUPTI library's copy guard read-protects the destinations of
//     asynchronous copies until a sync, and resolves the faults a read of one
//     raises (it lifts the guard and writes a GuardedAccess chunk); the
//     program then goes on as if nothing had happened. Other faults go on below;
//   - std::terminate (uncaught exception): drain, then the previous handler;
//   - exit(): the on_exit handler registered by start() stops cleanly, and
//     writes the exit status (an Exit chunk) before the End chunk;
//   - _exit()/_Exit(): this library interposes them (as sanitizers do) and
//     drains, with the exit status, before the exit_group system call, when
//     the program links it (libgdrt does). A CUDA program traced only
//     through the CUPTI injection library loads it with dlopen, too late to
//     interpose: there _exit loses what was recorded since the last periodic
//     flush (the writer's flush_interval_ms, CUPTI's 100 ms flush period), as
//     on SIGKILL, and its exit status;
//   - SIGKILL: nothing runs. Each live thread loses less than one buffer:
//     completed halves reach the file before the next half completes (see
//     recorder_state.h), the writer thread drains partly filled buffers
//     every flush_interval_ms, and a chunk cut in half is ignored by the reader.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <exception>

#include "gpudiag/fault_filter.h"
#include "recorder_state.h"

namespace gpudiag::rec::detail {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_previous[65];
std::atomic<bool> g_installed{false};
std::atomic<int> g_flushing{0};
std::terminate_handler g_previous_terminate = nullptr;
std::atomic<rec::FaultFilter> g_fault_filter{nullptr};

void pause_briefly() noexcept {
  timespec ts{0, 1000000};  // 1 ms
  nanosleep(&ts, nullptr);
}

bool is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE || sig == SIGILL; }

std::uint64_t faulting_pc(const void* context) {
#if defined(__x86_64__)
  return context ? static_cast<std::uint64_t>(static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]) : 0;
#elif defined(__aarch64__)
  return context ? static_cast<const ucontext_t*>(context)->uc_mcontext.pc : 0;
#else
  return 0;
#endif
}

constexpr int kMaxFrames = 64;

// The calling thread's stack from the faulting instruction outwards, into
// `frames`; returns the count and sets kCrashStartsAtFault in `flags` when
// the unwinder reached the faulting instruction (the handler's own frames are
// then left out). Async-signal-safe: libunwind's local unwinder steps through
// the signal frame, on the stack.
std::uint16_t fault_frames(const void* context, std::uint64_t (&frames)[kMaxFrames], std::uint16_t& flags) noexcept {
  void* ips[kMaxFrames];
  const int n = unw_backtrace(ips, kMaxFrames);
  int first = 0;
  if (const std::uint64_t pc = faulting_pc(context); pc != 0)
    for (int i = 0; i < n; ++i)
      if (reinterpret_cast<std::uint64_t>(ips[i]) == pc) {
        first = i;
        flags |= gdtrace::kCrashStartsAtFault;
        break;
      }
  std::uint16_t count = 0;
  for (int i = first; i < n; ++i) frames[count++] = reinterpret_cast<std::uint64_t>(ips[i]);
  return count;
}

Recorder* recorder_of_this_process() noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  return r == nullptr || r->fd < 0 || r->pid != static_cast<std::uint64_t>(getpid()) ? nullptr : r;
}

// Async-signal-safe: a stack buffer, the unwinder and one write(2).
void record_crash(int sig, const siginfo_t* info, const void* context) noexcept {
  Recorder* r = recorder_of_this_process();
  if (r == nullptr || r->crash_recorded.exchange(true)) return;
  struct {
    std::int32_t signal, code;
    std::uint64_t address, time_ns;
    std::uint32_t tid;
    std::uint16_t count, flags;
    std::uint64_t frames[kMaxFrames];
  } crash{};
  static_assert(offsetof(decltype(crash), frames) == 32);
  crash.signal = sig;
  crash.code = info ? info->si_code : 0;
  // si_addr is the fault's only when the kernel raised it (si_code > 0), not kill() or raise().
  crash.address = info && info->si_code > 0 && sig != SIGABRT ? reinterpret_cast<std::uint64_t>(info->si_addr) : 0;
  crash.time_ns = now_ns();
  crash.tid = current_tid();
  crash.count = fault_frames(context, crash.frames, crash.flags);
  write_small_chunk(r->fd, gdtrace::ChunkType::Crash, &crash, 32 + crash.count * 8);
}

void on_signal(int sig, siginfo_t* info, void* context) {
  // A fault the copy guard caused (a read of a guarded copy destination):
  // resolved, the faulting instruction runs again and the program goes on.
  if (sig == SIGSEGV)
    if (rec::FaultFilter filter = g_fault_filter.load(std::memory_order_acquire); filter != nullptr) {
      const int saved_errno = errno;
      const bool handled = filter(info, context);
      errno = saved_errno;
      if (handled) return;
    }
  const struct sigaction& before = g_previous[sig];
  // Only where the default action follows: a program's own handler may
  // recover (a JIT's guard page, a runtime's fault handling).
  if (is_fault(sig) && !(before.sa_flags & SA_SIGINFO) && before.sa_handler == SIG_DFL) record_crash(sig, info, context);
  emergency_flush();
  // A handler the program installed before us (e.g. one that maps pages on
  // a fault) gets the original siginfo and context, and we stay installed.
  const struct sigaction& previous = g_previous[sig];
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous.sa_handler == SIG_IGN) {
    return;
  } else if (previous.sa_handler != SIG_DFL) {
    previous.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);  // delivered with the default action once we return
}

void on_terminate() {
  emergency_flush();
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

}  // namespace

void write_exit_status(Recorder& r, int exit_status) noexcept {
  const std::int32_t payload[2] = {exit_status & 0xff, 0};
  write_small_chunk(r.fd, gdtrace::ChunkType::Exit, payload, sizeof payload);
}

void emergency_flush(int exit_status) noexcept {
  Recorder* r = recorder_of_this_process();
  if (r == nullptr) return;
  // One flusher at a time (two threads may crash together); the second waits.
  int expected = 0;
  if (!g_flushing.compare_exchange_strong(expected, 1)) {
    for (int i = 0; i < 500 && g_flushing.load() != 0; ++i) pause_briefly();
    return;
  }
  // Let a drain the writer thread started finish: the range it claimed (being
  // compressed or written) is not ours to write, and its chunk stays whole.
  for (int i = 0; i < 200 && r->writes_in_flight.load() != 0; ++i) pause_briefly();
  r->writes_in_flight.fetch_add(1);
  drain_all(*r, nullptr, DrainFrom::SignalHandler);
  // Everything recorded is in the file: readers need not warn that the
  // newest events may be missing, as they must after SIGKILL.
  // The segment made ready and never used: not left behind by a crash.
  if (r->ring != nullptr) r->ring->remove_unused_next();
  // A recording that stopped when a write failed did not end here: no End,
  // so that readers judge it only as far as its last Drained marker.
  const std::uint64_t written = r->events_written.load();
  if (r->write_error.load() == 0) {
    if (exit_status >= 0) write_exit_status(*r, exit_status);
    write_small_chunk(r->fd, gdtrace::ChunkType::End, &written, sizeof written);
  }
  r->writes_in_flight.fetch_sub(1);
  g_flushing.store(0);
}

void install_crash_handlers(Recorder&) noexcept {
  if (g_installed.exchange(true)) return;
  // An alternate stack, so a stack overflow still reaches the handler; only
  // where the thread has none: one the program set up stays its own.
  static char alt_stack[64 * 1024];
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    sigaltstack(&ss, nullptr);
  }
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    // Leave signals the program ignores ignored (e.g. SIGHUP under nohup).
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &sa, &g_previous[sig]);
  }
  g_previous_terminate = std::set_terminate(on_terminate);
}

}  // namespace gpudiag::rec::detail

namespace gpudiag::rec {

void set_fault_filter(FaultFilter filter) noexcept { detail::g_fault_filter.store(filter, std::memory_order_release); }

bool fault_filter_reachable() noexcept {
  if (detail::recorder_of_this_process() == nullptr || !detail::g_installed.load()) return false;
  struct sigaction current {};
  if (sigaction(SIGSEGV, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == detail::on_signal;
}

void record_fatal_fault(int sig, const siginfo_t* info, const void* context) noexcept {
  detail::record_crash(sig, info, context);
  detail::emergency_flush();
}

void record_guarded_access(const GuardedAccessRecord& access, const void* context) noexcept {
  detail::Recorder* r = detail::recorder_of_this_process();
  if (r == nullptr) return;
  struct {
    std::uint64_t time_ns, address, correlation;
    std::uint32_t tid;
    std::uint16_t count, flags;
    std::uint64_t frames[detail::kMaxFrames];
  } chunk{};
  static_assert(offsetof(decltype(chunk), frames) == 32);
  chunk.time_ns = now_ns();
  chunk.address = access.address;
  chunk.correlation = access.copy_correlation;
  chunk.tid = detail::current_tid();
  if (access.write) chunk.flags |= gdtrace::kGuardedWrite;
  if (!access.access_known) chunk.flags |= gdtrace::kGuardedAccessUnknown;
  chunk.count = detail::fault_frames(context, chunk.frames, chunk.flags);
  detail::write_small_chunk(r->fd, gdtrace::ChunkType::GuardedAccess, &chunk, 32 + chunk.count * 8u);
}

}  // namespace gpudiag::rec

// _exit and _Exit skip atexit handlers; drain first, and say the status the
// process exits with. Resolved before libc's when libgpudiag_record is
// linked into the program (as with libgdrt).
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  gpudiag::rec::detail::emergency_flush(status & 0xff);
  for (;;) syscall(SYS_exit_group, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  gpudiag::rec::detail::emergency_flush(status & 0xff);
  for (;;) syscall(SYS_exit_group, status);
}
