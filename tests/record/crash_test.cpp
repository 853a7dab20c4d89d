// The trace survives the traced program dying: for each way to die, a child
// records N events from two threads and dies; the trace must hold all N and
// read cleanly. On SIGKILL nothing runs at the death: each thread still
// alive may lose at most its last buffer (less than buffer_events events,
// the newest it recorded), a thread that exited loses nothing.
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
    // At most the last buffer of each of the two threads. A SIGKILL may also
    // cut a write short (the kernel stops a write between pages for a fatal
    // signal): the reader then keeps every whole chunk before it.
    EXPECT_GE(seen.size() + 2 * kBufferEvents, kEvents);
  } else {
    EXPECT_FALSE(t.truncated) << t.truncation_note;
    EXPECT_EQ(seen.size(), kEvents);
    EXPECT_EQ(t.dropped_events, 0u);
    // Everything reached the file (the crash handlers end it with an End
    // chunk): no report may warn that events may be missing.
    EXPECT_TRUE(t.stopped_cleanly);
  }
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

TEST(CrashSafety, TheProgramsOwnSignalStackIsKept) {
  auto o = die("altstack");
  ASSERT_TRUE(WIFEXITED(o.status)) << "status " << o.status;
  EXPECT_EQ(WEXITSTATUS(o.status), 0) << "44: the tracer replaced the program's sigaltstack";
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
  EXPECT_TRUE(o.trace.stopped_cleanly) << "exit() runs the recorder's on_exit stop, which writes the End chunk";
}

TEST(CrashSafety, UncaughtExceptionKeepsEveryEvent) {
  auto o = die("throw");
  expect_signal(o.status, SIGABRT);
  expect_events(o.trace, false);
}

// A program started with stderr closed: the trace file must not take
// descriptor 2, or std::terminate's message lands in it and hides the crash
// record written after it.
TEST(CrashSafety, UncaughtExceptionWithStderrClosedKeepsTheCrashRecord) {
  const std::string path = test::temp_path("crash-throw-closed-stderr.gdtrace");
  const int status = test::run(
      {"/bin/sh", "-c", "exec 2>&-; exec \"$0\" \"$@\"", GDTRACE_CRASH_CHILD, "throw", path, std::to_string(kEvents)});
  expect_signal(status, SIGABRT);
  const Trace t = read_gdtrace(path);
  expect_events(t, false);
  EXPECT_FALSE(t.corrupt_chunk);
  ASSERT_EQ(t.crashes.size(), 1u);
  EXPECT_EQ(t.crashes[0].signal, SIGABRT);
}

// What a thread recorded, from `first` to `last`, may miss only a tail of
// fewer than buffer_events events (its last buffer): never a hole.
void expect_only_a_tail_lost(const std::set<std::uint64_t>& seen, std::uint64_t first, std::uint64_t last,
                             std::uint64_t max_lost, const char* who) {
  std::uint64_t a = first;
  while (a <= last && seen.count(a) != 0) ++a;
  const std::uint64_t lost = last + 1 - a;
  EXPECT_LE(lost, max_lost) << who << " lost " << lost << " events";
  std::uint64_t after_hole = 0;
  for (; a <= last; ++a) after_hole += seen.count(a);
  EXPECT_EQ(after_hole, 0u) << who << ": events written after a lost one (a hole, not a lost tail)";
}

std::set<std::uint64_t> addresses(const Trace& t) {
  std::set<std::uint64_t> seen;
  for (const auto& a : t.allocs) seen.insert(a.addr);
  return seen;
}

TEST(CrashSafety, SigkillLosesAtMostTheDyingThreadsLastBuffer) {
  // The worker exited before the kill: it wrote everything as it left.
  auto o = die("kill");
  expect_signal(o.status, SIGKILL);
  expect_events(o.trace, true);
  EXPECT_FALSE(o.trace.stopped_cleanly) << "no End chunk after SIGKILL: reports must say events may be missing";
  const auto seen = addresses(o.trace);
  expect_only_a_tail_lost(seen, 1, kEvents / 2, kBufferEvents - 1, "main thread");
  expect_only_a_tail_lost(seen, kEvents / 2 + 1, kEvents, 0, "exited worker");
}

TEST(CrashSafety, SigkillLosesAtMostTheLastBufferOfEachLiveThread) {
  auto o = die("kill-live");
  expect_signal(o.status, SIGKILL);
  expect_events(o.trace, true);
  EXPECT_FALSE(o.trace.stopped_cleanly);
  const auto seen = addresses(o.trace);
  expect_only_a_tail_lost(seen, 1, kEvents / 2, kBufferEvents - 1, "main thread");
  expect_only_a_tail_lost(seen, kEvents / 2 + 1, kEvents, kBufferEvents - 1, "live worker");
}

// What a report of the killed run judges is whole: no thread lost an event
// from before the reader's horizon. Each thread recorded its events back to
// back, so a thread that lost its tail lost it from just after the last
// event it kept: the horizon is no later than that (with a millisecond for
// a thread descheduled between two events).
TEST(CrashSafety, SigkillsHorizonIsBelowEveryLostEvent) {
  auto o = die("kill-live");
  expect_signal(o.status, SIGKILL);
  ASSERT_FALSE(o.trace.complete());
  const auto seen = addresses(o.trace);
  for (const auto& [first, last] : {std::pair<std::uint64_t, std::uint64_t>{1, kEvents / 2}, {kEvents / 2 + 1, kEvents}}) {
    std::uint64_t kept_until = 0;
    std::uint64_t kept = 0;
    for (const Alloc& a : o.trace.allocs)
      if (a.addr >= first && a.addr <= last) kept_until = std::max(kept_until, a.time_ns), ++kept;
    if (kept == last + 1 - first) continue;  // this thread lost nothing
    EXPECT_LE(o.trace.complete_until_ns, kept_until + 1'000'000) << "events " << first << ".." << last;
  }
}

// A process that exits says its status: exit(), _exit() and a return from
// main; the program's own fault handler that exits too. One a signal killed
// says none (its Crash chunk says how it died).
TEST(CrashSafety, TheTraceSaysTheExitStatusOfAProcessThatExited) {
  const std::pair<const char*, int> ways[] = {{"exit", 5}, {"_exit", 7}, {"none", 0}, {"handler", 42},
                                              {"segv", -1}, {"abort", -1}, {"throw", -1}};
  for (const auto& [how, status] : ways) {
    SCOPED_TRACE(how);
    const Outcome o = die(how);
    EXPECT_EQ(o.trace.exit_status, status);
    EXPECT_TRUE(o.trace.stopped_cleanly);
  }
}

TEST(CrashSafety, NormalReturnKeepsEveryEvent) {
  auto o = die("none");
  ASSERT_TRUE(WIFEXITED(o.status));
  EXPECT_EQ(WEXITSTATUS(o.status), 0);
  expect_events(o.trace, false);
  EXPECT_TRUE(o.trace.stopped_cleanly);
}

}  // namespace
}  // namespace gpudiag
