// A program for `gpudiag trace` tests. It links libgpudiag_record, so
// recording starts by itself from GPUDIAG_TRACE. Usage:
//   traced_program EXIT_CODE [fork] [exec] [launch] [sleep] [print] [segv] [kill] [throw] [long]
// records 100 allocations (and, with "fork", a forked child records 50 more
// into its own trace), optionally sleeps until signalled, then exits.
// "launch" starts two ranks of a job as torchrun does: children that run
// this program again (`traced_program 0`) with RANK 0 and 1, LOCAL_RANK and
// WORLD_SIZE 2 set, and waits for them.
// "print" writes a line to stdout and exits 9 if that fails with EBADF
// (stdout closed), 8 if it fails otherwise; "throw" dies of an uncaught
// exception (std::terminate's message on stderr, then SIGABRT); "long"
// then records 300000 allocations and frees and, last, an out-of-memory.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gpudiag/record.h"

namespace rec = gpudiag::rec;

static void record(int n, std::uint64_t base) {
  for (int i = 0; i < n; ++i)
    rec::emit(rec::AllocEvent{.addr = base + static_cast<std::uint64_t>(i), .bytes = 16, .kind = gpudiag::MemKind::Device,
                              .device = 0, .stack = rec::capture_stack()});
}

int main(int argc, char** argv) {
  const int code = argc > 1 ? std::atoi(argv[1]) : 0;
  bool fork_child = false, exec_child = false, sleep_forever = false, print = false, segv = false, killed = false,
       uncaught = false, long_run = false, launch = false;
  for (int i = 2; i < argc; ++i) {
    fork_child |= std::strcmp(argv[i], "fork") == 0;
    exec_child |= std::strcmp(argv[i], "exec") == 0;
    sleep_forever |= std::strcmp(argv[i], "sleep") == 0;
    segv |= std::strcmp(argv[i], "segv") == 0;
    killed |= std::strcmp(argv[i], "kill") == 0;
    print |= std::strcmp(argv[i], "print") == 0;
    uncaught |= std::strcmp(argv[i], "throw") == 0;
    long_run |= std::strcmp(argv[i], "long") == 0;
    launch |= std::strcmp(argv[i], "launch") == 0;
  }
  record(100, 1);
  if (fork_child) {
    pid_t pid = fork();
    if (pid == 0) {
      record(50, 1000);
      std::exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  if (exec_child) {  // a child that records nothing: it runs an untraced program
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/true", "true", nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  if (launch) {
    pid_t ranks[2];
    for (int rank = 0; rank < 2; ++rank) {
      ranks[rank] = fork();
      if (ranks[rank] == 0) {
        const std::string r = std::to_string(rank);
        setenv("RANK", r.c_str(), 1);
        setenv("LOCAL_RANK", r.c_str(), 1);
        setenv("WORLD_SIZE", "2", 1);
        execl(argv[0], argv[0], "0", nullptr);
        _exit(127);
      }
    }
    for (const pid_t pid : ranks) waitpid(pid, nullptr, 0);
  }
  if (long_run) {
    for (std::uint64_t i = 0; i < 300000; ++i) {
      const std::uint64_t addr = 0x50000000 + (i % 16) * 0x1000;
      rec::emit(rec::AllocEvent{.addr = addr, .bytes = 4096, .kind = gpudiag::MemKind::Device, .device = 0});
      rec::emit(rec::FreeEvent{.addr = addr, .kind = gpudiag::MemKind::Device, .device = 0});
    }
    rec::emit(rec::OutOfMemoryEvent{.requested_bytes = 1ull << 40, .device = 0, .stack = rec::capture_stack()});
  }
  if (sleep_forever) {
    // Not forever: if the test never signals (it failed first), SIGALRM ends
    // the wait, so no orphan keeps the test's output pipe open.
    alarm(30);
    write(STDOUT_FILENO, "ready\n", 6);
    pause();
  }
  if (print && write(STDOUT_FILENO, "printed\n", 8) != 8) return errno == EBADF ? 9 : 8;
  if (segv) raise(SIGSEGV);
  if (killed) raise(SIGKILL);
  if (uncaught) throw std::runtime_error("uncaught on purpose");
  return code;
}
