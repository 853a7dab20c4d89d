// A traced program that dies of a fault: the crash is in the trace (signal,
// address, thread, stack from the faulting instruction), every report form
// leads with it, and a fault inside device memory is GD001, inside freed
// memory GD004, each with the allocation's stack.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

struct Crashed {
  int status = 0;
  Trace trace;
};

Crashed run_faulting_program(const std::string& how) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gpudiag-crash-" + how + "-" + std::to_string(getpid()) + ".gdtrace"))
                               .string();
  Crashed c;
  const pid_t pid = fork();
  if (pid == 0) {
    execl(DEVICE_FAULT_PROGRAM, DEVICE_FAULT_PROGRAM, how.c_str(), path.c_str(), nullptr);
    _exit(127);
  }
  waitpid(pid, &c.status, 0);
  c.trace = load_trace(path);
  symbolize(c.trace);
  std::filesystem::remove(path);
  return c;
}

TEST(CrashReport, TheFaultIsRecordedAndTheProgramStillDiesOfIt) {
  const Crashed c = run_faulting_program("live");
  ASSERT_TRUE(WIFSIGNALED(c.status)) << "the tracer must not change how the program ends";
  EXPECT_EQ(WTERMSIG(c.status), SIGSEGV);
  ASSERT_EQ(c.trace.crashes.size(), 1u);
  const Crash& crash = c.trace.crashes[0];
  EXPECT_EQ(crash.signal, SIGSEGV);
  EXPECT_EQ(crash.code, SEGV_ACCERR);
  ASSERT_EQ(c.trace.allocs.size(), 1u);
  EXPECT_EQ(crash.address, c.trace.allocs[0].addr + 16) << "loss[4] of the allocation";
  EXPECT_NE(crash.tid, 0u);
  const auto frames = frames_of(c.trace, crash.stack);
  ASSERT_FALSE(frames.empty());
  EXPECT_NE(frames[0].function.find("read_loss_on_host"), std::string::npos)
      << "the stack starts at the faulting instruction, not in the signal handler: " << frames[0].function;
  EXPECT_TRUE(c.trace.stopped_cleanly) << "the crash handler still ends the file";
}

TEST(CrashReport, AFaultInsideDeviceMemoryIsGD001WithTheAllocatingStack) {
  const Crashed c = run_faulting_program("live");
  const Report r = analyze(c.trace);
  const auto f = only(r.findings, "GD001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("the host dereferenced device memory and the program died of it"), std::string::npos)
      << f[0].message;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_NE(f[0].stack[0].function.find("read_loss_on_host"), std::string::npos);
  ASSERT_EQ(f[0].notes.size(), 1u);
  ASSERT_FALSE(f[0].notes[0].stack.empty());
  EXPECT_NE(f[0].notes[0].stack[0].function.find("allocate_device_buffer"), std::string::npos);
  EXPECT_TRUE(only(r.findings, "GD004").empty());
}

TEST(CrashReport, AFaultInsideFreedMemoryIsGD004) {
  const Crashed c = run_faulting_program("freed");
  const Report r = analyze(c.trace);
  EXPECT_TRUE(only(r.findings, "GD001").empty()) << "the memory was freed: not a live device allocation";
  const auto f = only(r.findings, "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("the program died of a fault touching"), std::string::npos) << f[0].message;
}

TEST(CrashReport, EveryReportFormLeadsWithTheCrash) {
  const Crashed c = run_faulting_program("live");
  const Report r = analyze(c.trace);
  const auto warnings = trace_warnings(c.trace);
  ASSERT_FALSE(warnings.empty());
  EXPECT_EQ(warnings[0].id, "crashed");
  EXPECT_NE(warnings[0].message.find("the program crashed: SIGSEGV (no access to the address at 0x"), std::string::npos)
      << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("in "), std::string::npos) << warnings[0].message;

  std::ostringstream summary;
  print_summary(summary, c.trace, r, {});
  const std::string text = summary.str();
  EXPECT_LT(text.find("the program crashed"), text.find("Findings:")) << text;
  EXPECT_EQ(report_json(c.trace, r)["trace"]["warnings"][0]["id"], "crashed");
  const auto sarif = report_sarif(c.trace, r, {});
  EXPECT_NE(sarif.dump().find("the program crashed: SIGSEGV"), std::string::npos);
  std::ostringstream html;
  write_html(html, c.trace, r);
  EXPECT_NE(html.str().find("the program crashed: SIGSEGV"), std::string::npos);
}

TEST(CrashReport, ACrashSurvivesWritingTheTraceAgain) {
  const Crashed c = run_faulting_program("live");
  const std::string copy =
      (std::filesystem::temp_directory_path() / ("gpudiag-crash-copy-" + std::to_string(getpid()) + ".gdtrace")).string();
  write_gdtrace(c.trace, copy);
  const Trace again = load_trace(copy);
  std::filesystem::remove(copy);
  ASSERT_EQ(again.crashes.size(), 1u);
  EXPECT_EQ(again.crashes[0].address, c.trace.crashes[0].address);
  EXPECT_EQ(again.stack(again.crashes[0].stack).frames.size(), c.trace.stack(c.trace.crashes[0].stack).frames.size());
}

}  // namespace
}  // namespace gpudiag
