// `gpudiag trace`: runs the command with tracing on, one trace per process,
// returns the command's status (128+signal when killed), forwards signals,
// prints a summary, and refuses a missing command with status 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gpudiag/trace.h"
#include "gpudiag/import/load_trace.h"
#include "run_command.h"
#include "gpudiag_cli.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;

using test::CliRun;
using test::fresh_dir;
using test::gpudiag;

TEST(TraceCommand, ReturnsTheExitStatusAndWritesTheTrace) {
  const std::string dir = fresh_dir("exit");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", TRACED_PROGRAM, "3"}, dir);
  EXPECT_EQ(r.status, 3) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  EXPECT_EQ(t.allocs.size(), 100u);
  EXPECT_NE(t.stack(t.allocs[0].stack).frames.size(), 0u) << "stacks are on by default";
  EXPECT_NE(r.err.find("100 allocations"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.err;
}

// What the Python hook writes beside the root's trace (the allocator history,
// the snapshot at an out-of-memory) follows it to the name asked for, and
// what an earlier run left beside that name goes.
TEST(TraceCommand, FilesBesideTheRootsTraceFollowItAndAnEarlierRunsGo) {
  const std::string dir = fresh_dir("beside");
  const auto beside = [&](const char* suffix) { return dir + "/run.gdtrace" + suffix; };
  for (const bool writes : {true, false}) {
    std::ofstream(beside(".torch-oom.pickle")) << "an earlier run's";
    std::ofstream(beside(".torch-memory.json")) << "an earlier run's";
    // The shell writes them under its pid, then becomes the program: the root.
    const std::string script =
        std::string(writes ? "t=$(printf %s \"$GPUDIAG_TRACE\" | sed \"s/%p/$$/\"); echo this > \"$t.torch-oom.pickle\"; "
                             "echo this > \"$t.torch-memory.json\"; "
                           : "") +
        "exec " + TRACED_PROGRAM + " 0";
    const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c", script}, dir);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_TRUE(fs::exists(dir + "/run.gdtrace")) << r.err;
    for (const char* suffix : {".torch-oom.pickle", ".torch-memory.json"}) {
      if (writes)
        EXPECT_EQ(test::read_file(beside(suffix)), "this\n") << suffix;
      else
        EXPECT_FALSE(fs::exists(beside(suffix))) << suffix << ": an earlier run's file stayed beside the trace";
    }
  }
}

TEST(TraceCommand, StacksOffRecordsNoStacks) {
  const std::string dir = fresh_dir("nostacks");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--stacks=off", "--", TRACED_PROGRAM, "0"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  ASSERT_EQ(t.allocs.size(), 100u);
  EXPECT_EQ(t.allocs[0].stack, 0u);
}

TEST(TraceCommand, ForkedChildGetsItsOwnTraceNamedByPid) {
  const std::string dir = fresh_dir("fork");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "fork"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u);
  std::vector<std::string> children;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("run.") && e.path().extension() == ".gdtrace" &&
        e.path().filename() != "run.gdtrace")
      children.push_back(e.path());
  ASSERT_EQ(children.size(), 1u);
  const Trace child = load_trace(children[0]);
  EXPECT_EQ(child.allocs.size(), 50u) << "the child's events only";
  EXPECT_EQ(children[0], dir + "/run." + std::to_string(child.pid) + ".gdtrace");
}

TEST(TraceCommand, ChildThatRecordedNothingLeavesNoTrace) {
  const std::string dir = fresh_dir("exec");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "exec"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> traces;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".gdtrace") traces.push_back(e.path().filename());
  EXPECT_EQ(traces, std::vector<std::string>{"run.gdtrace"}) << r.err;
}

TEST(TraceCommand, KilledCommandGives128PlusSignalAndAReadableTrace) {
  const std::string dir = fresh_dir("segv");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "segv"}, dir);
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u);
  // The crash handler wrote every buffer and the End chunk: nothing is missing.
  EXPECT_EQ(r.err.find("did not stop cleanly"), std::string::npos) << r.err;
}

// Whether a line of `text` starts with `prefix`.
bool has_line(const std::string& text, const std::string& prefix) {
  return text.starts_with(prefix) || text.find("\n" + prefix) != std::string::npos;
}

// The crash chunk is the last thing the command writes: gpudiag reads it
// after the command died, before it stops following the trace.
TEST(TraceCommand, LiveFindingsSayTheCrashOnGpudiagsStderr) {
  const std::string dir = fresh_dir("live-crash");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "segv"}, dir);
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_TRUE(has_line(r.err, "gpudiag: the program crashed: SIGSEGV")) << r.err;
  EXPECT_TRUE(has_line(r.err, "gpudiag trace: ")) << "the end-of-run report follows: " << r.err;
}

TEST(TraceCommand, LiveOffSaysNothingWhileTheCommandRuns) {
  const std::string dir = fresh_dir("live-off");
  const CliRun r = gpudiag({"trace", "--live=off", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "segv"}, dir);
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_FALSE(has_line(r.err, "gpudiag: the program crashed")) << r.err;
  EXPECT_NE(r.err.find("the program crashed: SIGSEGV"), std::string::npos) << "the report still says it: " << r.err;
}

#ifdef OOM_SAMPLE
// The out-of-memory sample on a 32 MiB emu device: GD008 is said on
// gpudiag's stderr as the run goes, once, and not with --live=off.
TEST(TraceCommand, LiveFindingsSayTheOutOfMemoryOfTheSample) {
  const std::string dir = fresh_dir("live-oom");
  const std::vector<std::string> env = {"GDRT_DEVICE=emu", "GDRT_EMU_MEMORY=32M"};
  const CliRun on = gpudiag({"trace", "-o", "run.gdtrace", "--", OOM_SAMPLE}, dir, env);
  EXPECT_TRUE(has_line(on.err, "gpudiag: GD008 out-of-memory: out of memory on device")) << on.err;
  const auto first = on.err.find("gpudiag: GD008");
  EXPECT_EQ(on.err.find("gpudiag: GD008", first + 1), std::string::npos) << "said once: " << on.err;
  const CliRun off = gpudiag({"trace", "--live=off", "-o", "run.gdtrace", "--", OOM_SAMPLE}, dir, env);
  EXPECT_EQ(off.status, on.status) << off.err;
  EXPECT_FALSE(has_line(off.err, "gpudiag: GD008")) << off.err;
  EXPECT_NE(off.err.find("GD008 out-of-memory"), std::string::npos) << "the report still has it: " << off.err;
}
#endif

TEST(TraceCommand, SigkilledCommandsTraceSaysTheNewestEventsMayBeMissing) {
  const std::string dir = fresh_dir("sigkill");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "kill"}, dir);
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
  EXPECT_NO_THROW(load_trace(dir + "/run.gdtrace"));
  // No End chunk: the short summary says so (indented under its trace).
  EXPECT_NE(r.err.find("\n    the recording has no end"), std::string::npos) << r.err;
}

// Runs `gpudiag trace` on a command that records 100 allocations and sleeps,
// sends `sig` to gpudiag once the command is ready; gpudiag's exit status.
int trace_a_sleeper_and_signal_gpudiag(const std::string& dir, int sig) {
  int out[2];
  if (pipe(out) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execl(GPUDIAG_EXE, GPUDIAG_EXE, "trace", "-o", "run.gdtrace", TRACED_PROGRAM, "0", "sleep", nullptr);
    _exit(125);
  }
  close(out[1]);
  char buf[6] = {};
  const bool ready = read(out[0], buf, sizeof buf) == 6;  // the command says it is ready
  close(out[0]);
  if (!ready) kill(pid, SIGKILL);
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  return ready && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TraceCommand, ForwardsSigtermToTheCommand) {
  const std::string dir = fresh_dir("signal");
  EXPECT_EQ(trace_a_sleeper_and_signal_gpudiag(dir, SIGTERM), 128 + SIGTERM) << "the command got SIGTERM and gpudiag reports it";
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u) << "flushed on SIGTERM";
}

// Batch schedulers warn of preemption with SIGUSR1 (SLURM's --signal) or
// SIGUSR2: meant for the training run, not for gpudiag.
TEST(TraceCommand, ForwardsUserSignalsToTheCommand) {
  for (int sig : {SIGUSR1, SIGUSR2}) {
    const std::string dir = fresh_dir("usr-signal");
    EXPECT_EQ(trace_a_sleeper_and_signal_gpudiag(dir, sig), 128 + sig) << strsignal(sig);
  }
}

// The copy guard lives in the CUPTI library, which reads GPUDIAG_TRACE_GUARD.
TEST(TraceCommand, GuardCopiesIsOnByDefaultAndCanBeTurnedOff) {
  const std::string dir = fresh_dir("guard");
  const std::string print = "printf '%s' \"$GPUDIAG_TRACE_GUARD\" > guard.txt";
  CliRun r = gpudiag({"trace", "--", "/bin/sh", "-c", print}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::read_file(dir + "/guard.txt"), "on");
  r = gpudiag({"trace", "--guard-copies", "off", "--", "/bin/sh", "-c", print}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::read_file(dir + "/guard.txt"), "off");
  EXPECT_EQ(gpudiag({"trace", "--guard-copies=sometimes", "--", "true"}, dir).status, 2);
}

TEST(TraceCommand, MaxSizeBoundsTheTraceAndTheLiveLinesFollowItsSegments) {
  const std::string dir = fresh_dir("max-size");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--max-size", "1M", "--", TRACED_PROGRAM, "0", "long"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  // The trace file and its segments (named by the pid that wrote them),
  // not the HTML report beside them: over by at most a segment, however
  // busy the machine (a writer thread that waits for a core writes whole
  // buffers at once, uncompressed, and drops segments late).
  const std::uint64_t report_bytes = fs::exists(dir + "/run.gdtrace.html") ? fs::file_size(dir + "/run.gdtrace.html") : 0;
  EXPECT_LE(test::bytes_of_files_starting_with(dir, "run.") - report_bytes, (1u << 20) + (1u << 17)) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  EXPECT_TRUE(t.bounded());
  EXPECT_LT(t.allocs.size(), 300000u);
  ASSERT_EQ(t.ooms.size(), 1u) << "the newest events, in the newest segment";
  // The out-of-memory was written to a segment file, which the live watch followed.
  EXPECT_NE(r.err.find("gpudiag: GD008"), std::string::npos) << r.err;
}

TEST(TraceCommand, MaxSizeIsPassedOnAndRefusesWhatIsNoSize) {
  const std::string dir = fresh_dir("max-size-env");
  const std::string print = "printf '%s' \"$GPUDIAG_TRACE_MAX_SIZE\" > size.txt";
  EXPECT_EQ(gpudiag({"trace", "--", "/bin/sh", "-c", print}, dir).status, 0);
  EXPECT_EQ(test::read_file(dir + "/size.txt"), std::to_string(2ull << 30)) << "2G by default";
  EXPECT_EQ(gpudiag({"trace", "--max-size=64M", "--", "/bin/sh", "-c", print}, dir).status, 0);
  EXPECT_EQ(test::read_file(dir + "/size.txt"), std::to_string(64ull << 20));
  EXPECT_EQ(gpudiag({"trace", "--max-size=off", "--", "/bin/sh", "-c", print}, dir, {"GPUDIAG_TRACE_MAX_SIZE=5M"}).status, 0);
  EXPECT_EQ(test::read_file(dir + "/size.txt"), "") << "off: no bound, whatever the environment said";
  const CliRun garbage = gpudiag({"trace", "--max-size=12Q", "--", "true"}, dir);
  EXPECT_EQ(garbage.status, 2);
  EXPECT_NE(garbage.err.find("not a size"), std::string::npos) << garbage.err;
  const CliRun tiny = gpudiag({"trace", "--max-size=100k", "--", "true"}, dir);
  EXPECT_EQ(tiny.status, 2);
  EXPECT_NE(tiny.err.find("below the smallest bound"), std::string::npos) << tiny.err;
}

TEST(TraceCommand, MissingCommandIsAUsageError) {
  const std::string dir = fresh_dir("usage");
  const CliRun r = gpudiag({"trace"}, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no command"), std::string::npos) << r.err;
  const CliRun bad = gpudiag({"trace", "--stacks=maybe", "--", "true"}, dir);
  EXPECT_EQ(bad.status, 2);
}

TEST(TraceCommand, OutputInAMissingDirectoryIsAUsageError) {
  const std::string dir = fresh_dir("nodir");
  const CliRun r = gpudiag({"trace", "-o", "missing/run.gdtrace", "--", TRACED_PROGRAM, "0"}, dir);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

// Found before the command runs: it does not run for a trace that cannot be kept.
TEST(TraceCommand, OutputDirectoryThatRefusesFilesIsAUsageErrorBeforeTheRun) {
  const std::string dir = fresh_dir("unwritable");
  // /proc is a directory in which nobody, root included, can create a file.
  const CliRun r = gpudiag({"trace", "-o", "/proc/run.gdtrace", "--", "/bin/sh", "-c", "touch ran"}, dir);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("gpudiag trace: cannot write in the output directory /proc: "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/ran")) << "the command must not run";
}

TEST(TraceCommand, OutputUnderAFileIsAUsageErrorBeforeTheRun) {
  const std::string dir = fresh_dir("under-file");
  test::write_file(dir + "/file", "x");
  const CliRun r = gpudiag({"trace", "-o", "file/run.gdtrace", "--", "/bin/sh", "-c", "touch ran"}, dir);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("the output directory file is not a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/ran")) << "the command must not run";
}

// The recorder started and could not create its file (here the command
// removed the output directory first): that is the reason given, not that
// nothing was loaded.
TEST(TraceCommand, ATraceTheRecorderCouldNotCreateIsExplainedByItsError) {
  const std::string dir = fresh_dir("recorder-error");
  fs::create_directory(dir + "/out");
  const CliRun r = gpudiag(
      {"trace", "-o", "out/run.gdtrace", "--", "/bin/sh", "-c", "rm -r out && exec \"$0\" 0", TRACED_PROGRAM}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  const auto reason = r.err.find("  no trace was written: cannot create trace file ");
  ASSERT_NE(reason, std::string::npos) << r.err;
  const std::string line = r.err.substr(reason, r.err.find('\n', reason) - reason);
  EXPECT_NE(line.find("/out/run."), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with(".gdtrace: No such file or directory")) << line;
  EXPECT_EQ(r.err.find("loaded neither"), std::string::npos) << r.err;
}

// One process of the command recorded, another could not: the traces are
// summarized, and the other's reason is said.
TEST(TraceCommand, AProcessThatCouldNotRecordIsNamedBesideTheTraces) {
  const std::string dir = fresh_dir("recorder-error-beside");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c",
                            "GPUDIAG_TRACE=/proc/elsewhere.%p.gdtrace \"$0\" 0 && exec \"$0\" 0", TRACED_PROGRAM},
                           dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u) << r.err;
  EXPECT_NE(r.err.find("  warning: a process of the command could not record: cannot create trace file "
                       "/proc/elsewhere."),
            std::string::npos)
      << r.err;
}

// A relative -o names a file of gpudiag's directory, also for a command that
// changes directory before it starts recording.
TEST(TraceCommand, CommandThatChangesDirectoryStillWritesTheNamedTrace) {
  const std::string dir = fresh_dir("cd");
  const CliRun r = gpudiag(
      {"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c", "mkdir sub && cd sub && exec \"$0\" 0", TRACED_PROGRAM},
      dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u) << r.err;
}

// A command started with stdout closed behaves as untraced: its writes there
// fail with EBADF, and none of them lands in the trace file.
TEST(TraceCommand, CommandWithStdoutClosedKeepsItClosedAndTheTraceWhole) {
  const std::string dir = fresh_dir("closed-stdout");
  const std::string closed = "exec 1>&-; exec \"$0\" 0 print";
  const int untraced = test::run({"/bin/sh", "-c", closed, TRACED_PROGRAM});
  ASSERT_TRUE(WIFEXITED(untraced));
  ASSERT_EQ(WEXITSTATUS(untraced), 9) << "untraced, the write to the closed stdout fails with EBADF";
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c", closed, TRACED_PROGRAM}, dir);
  EXPECT_EQ(r.status, 9) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  EXPECT_EQ(t.allocs.size(), 100u);
  EXPECT_FALSE(t.corrupt_chunk);
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_EQ(test::read_file(dir + "/run.gdtrace").find("printed"), std::string::npos);
}

// `gpudiag trace ... >&-`: the command starts with stdout closed, as gpudiag did.
TEST(TraceCommand, GpudiagStartedWithStdoutClosedGivesTheCommandAClosedStdout) {
  const std::string dir = fresh_dir("gpudiag-closed-stdout");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", TRACED_PROGRAM, "0", "print"}, dir, {}, STDOUT_FILENO);
  EXPECT_EQ(r.status, 9) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  EXPECT_EQ(t.allocs.size(), 100u);
  EXPECT_FALSE(t.corrupt_chunk);
}

// With stderr closed, std::terminate's message must not land in the trace
// (it would hide the SIGABRT crash record written after it).
TEST(TraceCommand, AbortWithStderrClosedKeepsTheCrashRecord) {
  const std::string dir = fresh_dir("closed-stderr-abort");
  const CliRun r = gpudiag(
      {"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c", "exec 2>&-; exec \"$0\" 0 throw", TRACED_PROGRAM}, dir);
  EXPECT_EQ(r.status, 128 + SIGABRT) << r.err;
  const Trace t = load_trace(dir + "/run.gdtrace");
  EXPECT_EQ(t.allocs.size(), 100u);
  EXPECT_FALSE(t.corrupt_chunk);
  ASSERT_EQ(t.crashes.size(), 1u) << r.err;
  EXPECT_EQ(t.crashes[0].signal, SIGABRT);
  EXPECT_EQ(test::read_file(dir + "/run.gdtrace").find("terminate called"), std::string::npos);
}

// `gpudiag ... 2>&-`: a file of gpudiag's own must not take descriptor 2,
// or the messages it prints there land in that file (here the report, when
// the HTML beside it cannot be written).
TEST(Gpudiag, StartedWithStderrClosedKeepsItsMessagesOutOfItsFiles) {
  const std::string dir = fresh_dir("gpudiag-closed-stderr");
  const CliRun traced = gpudiag({"trace", "-o", "run.gdtrace", "--", TRACED_PROGRAM, "3"}, dir, {}, STDERR_FILENO);
  EXPECT_EQ(traced.status, 3);
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").allocs.size(), 100u);
  const CliRun r = gpudiag({"report", "run.gdtrace", "-o", "report.txt", "--html", "missing/run.html"}, dir, {},
                           STDERR_FILENO);
  EXPECT_EQ(r.status, 2);
  const std::string report = test::read_file(dir + "/report.txt");
  EXPECT_NE(report.find("100 allocations"), std::string::npos) << report;
  EXPECT_EQ(report.find("cannot write"), std::string::npos) << report;
}

TEST(TraceCommand, OutputDirectoryGetsTraceGdtraceInside) {
  const std::string dir = fresh_dir("outdir");
  std::filesystem::create_directory(dir + "/runs");
  const CliRun r = gpudiag({"trace", "-o", "runs", "--", TRACED_PROGRAM, "0"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(load_trace(dir + "/runs/trace.gdtrace").allocs.size(), 100u) << r.err;
}

TEST(TraceCommand, OutputNamedWithPidKeepsThePid) {
  const std::string dir = fresh_dir("pidname");
  const CliRun r = gpudiag({"trace", "-o", "run-%p.gdtrace", "--", TRACED_PROGRAM, "0"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/run-%p.gdtrace")) << "%p is replaced, not kept literally";
  int traces = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    traces += e.path().filename().string().starts_with("run-") && e.path().extension() == ".gdtrace";
  EXPECT_EQ(traces, 1) << r.err;
}

// The command's arguments reach it unchanged and in order: its own flags,
// an -o of its own and a `--` of its own included.
TEST(TraceCommand, CommandArgumentsPassThroughUnchanged) {
  const std::string dir = fresh_dir("args");
  const std::string print = "for a; do printf '[%s]' \"$a\"; done > args.txt";
  const std::vector<std::vector<std::string>> lines = {
      {"trace", "--", "/bin/sh", "-c", print, "sh", "train.py", "--lr", "0.1", "-o", "out.bin", "--", "-v"},
      {"trace", "-o", "run.gdtrace", "/bin/sh", "-c", print, "sh", "train.py", "--lr", "0.1", "-o", "out.bin", "--", "-v"},
      {"trace", "--stacks=off", "--", "/bin/sh", "-c", print, "sh", "train.py", "--lr", "0.1", "-o", "out.bin", "--", "-v"}};
  for (const auto& line : lines) {
    const CliRun r = gpudiag(line, dir);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(test::read_file(dir + "/args.txt"), "[train.py][--lr][0.1][-o][out.bin][--][-v]") << r.err;
  }
}

TEST(TraceCommand, MistypedOptionIsAUsageErrorNotACommand) {
  const std::string dir = fresh_dir("typo");
  const CliRun r = gpudiag({"trace", "--stack=off", "--", "/bin/true"}, dir);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("unknown option '--stack=off'"), std::string::npos) << r.err;
}

TEST(TraceCommand, CommandThatCannotRunIs127) {
  const std::string dir = fresh_dir("noexec");
  const CliRun r = gpudiag({"trace", "--", "/nonexistent/program"}, dir);
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("cannot run"), std::string::npos) << r.err;
}

TEST(TraceCommand, CommandWithoutRecorderSaysNothingWasRecorded) {
  const std::string dir = fresh_dir("plain");
  const CliRun r = gpudiag({"trace", "--", "/bin/true"}, dir);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("no trace was written"), std::string::npos) << r.err;
}

TEST(TraceCommand, AnInjectionLibraryThatCannotLoadIsNamedWithTheLoadersReason) {
  const std::string dir = fresh_dir("bad-injection");
  const std::string library = dir + "/libgpudiag_cupti.so";
  test::write_file(library, std::string(4096, 'x'));  // no ELF header
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", TRACED_PROGRAM, "0"}, dir,
                           {"GPUDIAG_CUPTI_LIBRARY=" + library});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: CUDA activity was not traced: the CUDA driver cannot load the injection library: " +
                       library + ": "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("invalid ELF header"), std::string::npos) << "the loader's own reason: " << r.err;
}

// The injection library is named to NVTX too, so that the program's NVTX
// ranges reach CUPTI; an NVTX tool the user set stays.
TEST(TraceCommand, TheInjectionLibraryIsNamedToNvtxUnlessAToolIsSet) {
  const std::string dir = fresh_dir("nvtx");
  const std::vector<std::string> show = {"trace", "-o", "run.gdtrace", "--", "/bin/sh", "-c",
                                         "echo \"nvtx=[$NVTX_INJECTION64_PATH] cuda=[$CUDA_INJECTION64_PATH]\" >&2"};
  const CliRun r = gpudiag(show, dir, {"NVTX_INJECTION64_PATH="});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto cuda = r.err.find("cuda=[");
  ASSERT_NE(cuda, std::string::npos) << r.err;
  const std::string library = r.err.substr(cuda + 6, r.err.find(']', cuda) - cuda - 6);
  EXPECT_NE(r.err.find("nvtx=[" + library + "]"), std::string::npos) << r.err;
  const CliRun own = gpudiag(show, dir, {"NVTX_INJECTION64_PATH=/opt/tool/libnvtx_tool.so"});
  EXPECT_NE(own.err.find("nvtx=[/opt/tool/libnvtx_tool.so]"), std::string::npos) << own.err;
}

}  // namespace
}  // namespace gpudiag
