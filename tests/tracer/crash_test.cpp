// The trace survives the traced program dying: for each way to die, a child
// records N events from two threads and dies; the trace must hold all N
// (SIGKILL: all but the buffers not yet written: each thread's current one
// and at most two full ones waiting for the writer thread) and read cleanly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <set>

#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

constexpr std::uint64_t kEvents = 20000;  // ~78 buffers of 256 events (the pool holds 128)
constexpr std::uint64_t kBufferEvents = 256;

struct Outcome {
  int status;
  Trace trace;
};

Outcome die(const std::string& how) {
  const std::string path = test::temp_path("crash-" + how + ".gdtrace");
  const int status = test::run({GDTRACE_CRASH_CHILD, how, path, std::to_string(kEvents)});
  return {status, read_gdtrace(path)};
}

// Every address 1..N recorded exactly once, or (when allow_lost) at most one
// buffer's worth missing and nothing duplicated.
void expect_events(const Trace& t, bool allow_lost) {
  std::set<std::uint64_t> seen;
  for (const auto& a : t.allocs) {
    EXPECT_TRUE(seen.insert(a.addr).second) << "event " << a.addr << " written twice";
    EXPECT_EQ(a.bytes, 8u);
    EXPECT_EQ(a.kind, MemKind::Device);
  }
  if (allow_lost) {
    // Two threads' current buffers plus two full ones queued for the writer.
    EXPECT_GE(seen.size() + 4 * kBufferEvents, kEvents);
  } else {
    EXPECT_EQ(seen.size(), kEvents);
    EXPECT_EQ(t.dropped_events, 0u);
  }
  EXPECT_FALSE(t.truncated) << t.truncation_note;
}

void expect_signal(int status, int sig) {
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);
}

TEST(CrashSafety, SegfaultKeepsEveryEvent) {
  auto o = die("segv");
  expect_signal(o.status, SIGSEGV);
  expect_events(o.trace, false);
}

TEST(CrashSafety, ProgramsOwnSegvHandlerStillRunsWithTheFaultAddress) {
  auto o = die("handler");
  ASSERT_TRUE(WIFEXITED(o.status)) << "status " << o.status;
  EXPECT_EQ(WEXITSTATUS(o.status), 42) << "43: the handler saw another address";
  expect_events(o.trace, false);
}

TEST(CrashSafety, AbortKeepsEveryEvent) {
  auto o = die("abort");
  expect_signal(o.status, SIGABRT);
  expect_events(o.trace, false);
}

TEST(CrashSafety, BusErrorKeepsEveryEvent) {
  auto o = die("bus");
  expect_signal(o.status, SIGBUS);
  expect_events(o.trace, false);
}

TEST(CrashSafety, UnderscoreExitKeepsEveryEvent) {
  auto o = die("_exit");
  ASSERT_TRUE(WIFEXITED(o.status));
  EXPECT_EQ(WEXITSTATUS(o.status), 7);
  expect_events(o.trace, false);
}

TEST(CrashSafety, ExitKeepsEveryEvent) {
  auto o = die("exit");
  ASSERT_TRUE(WIFEXITED(o.status));
  EXPECT_EQ(WEXITSTATUS(o.status), 5);
  expect_events(o.trace, false);
}

TEST(CrashSafety, UncaughtExceptionKeepsEveryEvent) {
  auto o = die("throw");
  expect_signal(o.status, SIGABRT);
  expect_events(o.trace, false);
}

TEST(CrashSafety, SigkillLosesAtMostTheLastBuffers) {
  auto o = die("kill");
  expect_signal(o.status, SIGKILL);
  expect_events(o.trace, true);
}

TEST(CrashSafety, NormalReturnKeepsEveryEvent) {
  auto o = die("none");
  ASSERT_TRUE(WIFEXITED(o.status));
  EXPECT_EQ(WEXITSTATUS(o.status), 0);
  expect_events(o.trace, false);
}

}  // namespace
}  // namespace gpudiag
