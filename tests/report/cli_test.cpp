// `gpudiag report` end to end: exit codes, formats, bad input.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpudiag/trace_io.h"
#include "run_command.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

using test::CommandResult;
using test::run_command;

CommandResult run(const std::string& args) { return run_command(std::string(GPUDIAG_EXE) + " " + args); }

std::filesystem::path temp_dir() {
  auto d = std::filesystem::path(GPUDIAG_BINARY_DIR) / "tests" / "report" / "cli_tmp";
  std::filesystem::create_directories(d);
  return d;
}

std::string write_trace(const std::string& name, bool with_error) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  alloc(t, 10, 0x1000, 64, 0);
  kernel(t, 20, 40, "k");
  if (with_error) {
    alloc(t, 50, 0x7000, 64, 0);
    t.host_accesses.push_back({.time_ns = 60, .addr = 0x7000, .bytes = 4});
  } else {
    free_at(t, 50, 0x1000);
  }
  const auto path = (temp_dir() / name).string();
  write_gdtrace(t, path);
  return path;
}

TEST(ReportCli, CleanTraceExitsZero) {
  const CommandResult r = run("report --no-color " + write_trace("clean.gdtrace", false));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Findings: 0"), std::string::npos) << r.out;
}

TEST(ReportCli, ErrorFindingExitsOneUnlessFailOnNone) {
  const std::string path = write_trace("bad.gdtrace", true);
  CommandResult r = run("report --no-color " + path);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("GD001 device-mismatch"), std::string::npos) << r.out;
  EXPECT_EQ(run("report --fail-on none " + path).status, 0);
  EXPECT_EQ(run("report --fail-on bogus " + path).status, 2);
}

TEST(ReportCli, JsonSarifAndHtmlFiles) {
  const std::string path = write_trace("bad2.gdtrace", true);
  const auto dir = temp_dir();
  const CommandResult j = run("report --json --fail-on none " + path);
  ASSERT_EQ(j.status, 0) << j.out;
  const auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["findings"][0]["rule"], "GD001");
  const CommandResult s = run("report --sarif --fail-on none -o " + (dir / "r.sarif").string() + " " + path);
  ASSERT_EQ(s.status, 0) << s.out;
  std::ifstream sf(dir / "r.sarif");
  EXPECT_EQ(nlohmann::json::parse(sf)["version"], "2.1.0");
  const CommandResult h = run("report --fail-on none --html " + (dir / "r.html").string() + " " + path);
  ASSERT_EQ(h.status, 0) << h.out;
  EXPECT_GT(std::filesystem::file_size(dir / "r.html"), 1000u);
  const CommandResult c = run("report --fail-on none --chrome " + (dir / "r.chrome.json").string() + " " + path);
  ASSERT_EQ(c.status, 0) << c.out;
  std::ifstream cf(dir / "r.chrome.json");
  EXPECT_FALSE(nlohmann::json::parse(cf)["traceEvents"].empty());
}

TEST(ReportCli, EveryFormSaysWhenTheTraceMayBeIncomplete) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  alloc(t, 10, 0x1000, 64, 0);
  free_at(t, 50, 0x1000);
  t.dropped_events = 4;
  t.stopped_cleanly = false;  // written without the End chunk, as after SIGKILL
  const auto dir = temp_dir();
  const std::string path = (dir / "killed.gdtrace").string();
  write_gdtrace(t, path);

  const CommandResult summary = run("report --no-color " + path);
  ASSERT_EQ(summary.status, 0) << summary.out;
  EXPECT_NE(summary.out.find("4 events were dropped"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("the recording has no end"), std::string::npos) << summary.out;
  // Written without the writer's Drained markers between its events, nothing of it is known to be whole.
  EXPECT_NE(summary.out.find("present until 0 ns after the start"), std::string::npos) << summary.out;

  const CommandResult j = run("report --json " + path);
  ASSERT_EQ(j.status, 0) << j.out;
  EXPECT_EQ(nlohmann::json::parse(j.out)["trace"]["warnings"].size(), 3u) << j.out;

  const CommandResult s = run("report --sarif " + path);
  ASSERT_EQ(s.status, 0) << s.out;
  const auto log = nlohmann::json::parse(s.out);
  const auto& invocation = log["runs"][0]["invocations"][0];
  EXPECT_EQ(invocation["executionSuccessful"], true);
  ASSERT_EQ(invocation["toolExecutionNotifications"].size(), 3u) << s.out;
  EXPECT_EQ(invocation["toolExecutionNotifications"][0]["descriptor"]["id"], "dropped-events");
  EXPECT_EQ(invocation["toolExecutionNotifications"][1]["descriptor"]["id"], "unclean-stop");
  EXPECT_EQ(invocation["toolExecutionNotifications"][2]["descriptor"]["id"], "incomplete-evidence");
}

TEST(ReportCli, BadInputExitsTwoWithAClearMessage) {
  const auto dir = temp_dir();
  CommandResult r = run("report " + (dir / "does-not-exist.gdtrace").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("does-not-exist"), std::string::npos) << r.out;
  std::ofstream(dir / "garbage.json") << "{\"not\": \"a trace\"";
  r = run("report " + (dir / "garbage.json").string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("gpudiag report:"), std::string::npos);
  EXPECT_EQ(run("report").status, 2);  // missing argument
  EXPECT_EQ(run("report --json --sarif " + write_trace("c.gdtrace", false)).status, 2);
  // A folder is a job: one whose every trace is unreadable is bad input.
  const auto garbage_only = dir / "garbage-only";
  std::filesystem::create_directories(garbage_only);
  std::ofstream(garbage_only / "rank0.json") << "{\"not\": \"a trace\"";
  r = run("report " + garbage_only.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no trace of the job could be read"), std::string::npos) << r.out;
}

// A pipe is read once, whole: the format is detected from those bytes.
TEST(ReportCli, ReadsATraceFromAPipe) {
  const std::string trace = write_trace("piped.gdtrace", false);
  CommandResult r = run_command("cat " + trace + " | " + GPUDIAG_EXE + " report --no-color /dev/stdin");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Findings: 0"), std::string::npos) << r.out;
  r = run_command(std::string("true | ") + GPUDIAG_EXE + " report /dev/stdin");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("empty"), std::string::npos) << r.out;
}

// The healthy UNet sample, traced as the main job traces it, is the example
// of a clean run: its iterations come from its marked steps, it gets no
// finding at all, and the host is called the host, never "device -1".
TEST(Cli, TheHealthyUNetSampleTracedGivesNoWarningAndNamesTheHostAsTheHost) {
  if (std::string(TRAIN_UNET_EXE).empty()) GTEST_SKIP() << "the UNet sample was not built";
  const std::string trace = (temp_dir() / "healthy_unet.gdtrace").string();
  const CommandResult r = run("trace -o " + trace + " -- " + TRAIN_UNET_EXE +
                       " --epochs 1 --train 64 --val 16 --size 32 --checkpoint ''");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("iterations (profiler steps)"), std::string::npos) << r.out;
  // No warning or error; a note may be true (on a GPU this small UNet is launch-bound).
  EXPECT_EQ(r.out.find("\n  warning "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n  error "), std::string::npos) << r.out;
  std::ifstream html(trace + ".html");
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(page.empty());
  for (const std::string& text : {r.out, page}) EXPECT_EQ(text.find("device -1"), std::string::npos);
}

}  // namespace
}  // namespace gpudiag
