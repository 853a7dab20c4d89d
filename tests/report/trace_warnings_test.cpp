// What a trace may be missing (dropped events, a file cut short or damaged,
// a recording that did not stop cleanly) reaches every report form: the
// terminal summary, JSON, the HTML page and SARIF.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gpudiag/report/report.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

constexpr const char* kUnclean = "the recording has no end";

Trace small_trace() {
  Trace t;
  t.path = "run.gdtrace";
  t.source = TraceSource::Gdtrace;
  alloc(t, 1000, 0x1000, 1 << 20, 0);
  kernel(t, 1500, 4000, "k");
  free_at(t, 5000, 0x1000);
  return t;
}

std::string summary(const Trace& t) {
  std::ostringstream out;
  print_summary(out, t, analyze(t), {});
  return out.str();
}

std::vector<std::string> ids(const std::vector<SarifNotification>& warnings) {
  std::vector<std::string> out;
  for (const auto& w : warnings) out.push_back(w.id);
  return out;
}

TEST(TraceWarnings, ACompleteTraceHasNone) {
  const Trace t = small_trace();
  EXPECT_TRUE(trace_warnings(t).empty());
  const std::string s = summary(t);
  EXPECT_EQ(s.find(kUnclean), std::string::npos) << s;
  EXPECT_EQ(s.find("truncated"), std::string::npos) << s;
}

TEST(TraceWarnings, UncleanStopIsShownInTheSummaryJsonAndHtml) {
  Trace t = small_trace();
  t.stopped_cleanly = false;
  EXPECT_EQ(ids(trace_warnings(t)), std::vector<std::string>{"unclean-stop"});
  const std::string s = summary(t);
  EXPECT_NE(s.find(kUnclean), std::string::npos) << s;
  EXPECT_NE(s.find("the events after its last chunk are missing"), std::string::npos) << s;
  EXPECT_EQ(s.find("SIGKILL"), std::string::npos) << "a cut between two chunks looks the same: no cause is blamed\n" << s;

  const auto j = report_json(t, analyze(t));
  EXPECT_EQ(j["trace"]["stopped_cleanly"], false);
  ASSERT_EQ(j["trace"]["warnings"].size(), 1u);
  EXPECT_EQ(j["trace"]["warnings"][0]["id"], "unclean-stop");
  EXPECT_NE(j["trace"]["warnings"][0]["message"].get<std::string>().find(kUnclean), std::string::npos);

  const auto data = html_data(t, analyze(t));
  EXPECT_EQ(data["stopped_cleanly"], false);
  ASSERT_EQ(data["warnings"].size(), 1u);
  std::ostringstream page;
  write_html(page, t, analyze(t));
  EXPECT_NE(page.str().find(kUnclean), std::string::npos);  // in the data the page renders
  EXPECT_NE(page.str().find("data.warnings"), std::string::npos);  // and the page renders it
}

TEST(TraceWarnings, AnAllocatorHistoryThatCouldNotBeReadIsSaidInEveryForm) {
  Trace t = small_trace();
  t.allocator_history_note = "run.gdtrace.torch-memory.json: not JSON";
  EXPECT_EQ(ids(trace_warnings(t)), std::vector<std::string>{"allocator-history"});
  const std::string s = summary(t);
  EXPECT_NE(s.find("the allocator history beside the trace could not be read (run.gdtrace.torch-memory.json: not "
                   "JSON): frees of PyTorch's cached blocks are not judged"),
            std::string::npos)
      << s;
  EXPECT_EQ(report_json(t, analyze(t))["trace"]["warnings"][0]["id"], "allocator-history");
  EXPECT_EQ(html_data(t, analyze(t))["warnings"].size(), 1u);
}

// A file cut short is said to be cut, once: not also blamed on a killed process.
TEST(TraceWarnings, AFileThatEndsEarlyIsCutShortAndNothingElse) {
  Trace t = small_trace();
  t.truncated = true;
  t.truncation_note = "file ends inside a chunk at byte 812; read the 9 whole chunks before it";
  t.stopped_cleanly = false;
  EXPECT_EQ(ids(trace_warnings(t)), std::vector<std::string>{"truncated-trace"});
  const std::string s = summary(t);
  EXPECT_NE(s.find("the trace is truncated (file ends inside a chunk at byte 812"), std::string::npos) << s;
  EXPECT_NE(s.find("the events after the cut are missing"), std::string::npos) << s;
  EXPECT_EQ(s.find(kUnclean), std::string::npos) << s;
  EXPECT_EQ(s.find("SIGKILL"), std::string::npos) << s;
}

// A trace whole only up to a point says so, and how much it leaves out; its
// findings are judged on that part alone.
TEST(TraceWarnings, AnIncompleteTraceSaysUpToWhenItIsWholeAndJudgesOnlyThat) {
  Trace t = small_trace();
  t.stopped_cleanly = false;
  t.complete_until_ns = 2000;  // the free at 5000 may be gone with the rest
  const auto w = trace_warnings(t);
  ASSERT_EQ(ids(w), (std::vector<std::string>{"unclean-stop", "incomplete-evidence"}));
  EXPECT_NE(w[1].message.find("present until 1.00 us after the start of the trace, and its events stop at 4.00 us"),
            std::string::npos)
      << w[1].message;
  EXPECT_NE(w[1].message.find("leaves out the 1 event after it"), std::string::npos) << w[1].message;
  const Report r = analyze(t);
  ASSERT_EQ(r.memory.devices.size(), 1u);
  EXPECT_EQ(r.memory.devices[0].blocks.size(), 1u);
  ASSERT_EQ(r.findings.size(), 1u) << "the block is not freed by the end of what is whole";
  EXPECT_EQ(r.findings[0].rule_id, "GD007");
  EXPECT_EQ(r.findings[0].severity, Severity::Note);
  EXPECT_NE(r.findings[0].message.find("not freed by the end of the recording"), std::string::npos)
      << r.findings[0].message;
  EXPECT_EQ(r.findings[0].message.find("never"), std::string::npos) << r.findings[0].message;
}

// A bounded trace says from when it has every event, in every form.
TEST(TraceWarnings, ABoundedTraceSaysFromWhenItHasEveryEvent) {
  Trace t = small_trace();
  t.detail_from_ns = 3000;
  const auto w = trace_warnings(t);
  ASSERT_EQ(ids(w), (std::vector<std::string>{"bounded-trace"}));
  EXPECT_NE(w[0].message.find("every event from 2.00 us after its start to its end at 4.00 us"), std::string::npos)
      << w[0].message;
  EXPECT_NE(report_json(t, analyze(t)).dump().find("bounded-trace"), std::string::npos);
}

TEST(TraceWarnings, ACorruptChunkIsDamageNotWhereTheRecordingStopped) {
  Trace t = small_trace();
  t.truncated = true;
  t.corrupt_chunk = true;
  t.truncation_note = "corrupt chunk at byte 4096 (checksum mismatch); the 90000 bytes after it were ignored";
  EXPECT_EQ(ids(trace_warnings(t)), std::vector<std::string>{"corrupt-trace"});
  const std::string s = summary(t);
  EXPECT_NE(s.find("damaged (corrupt chunk at byte 4096"), std::string::npos) << s;
  EXPECT_NE(s.find("the 90000 bytes after it were ignored"), std::string::npos) << s;
  EXPECT_EQ(s.find("recording stopped"), std::string::npos) << s;
  EXPECT_EQ(s.find(kUnclean), std::string::npos) << "the file ends with a clean stop's End chunk";
  std::ostringstream page;
  write_html(page, t, analyze(t));
  EXPECT_EQ(page.str().find("recording stopped"), std::string::npos);
}

TEST(TraceWarnings, ReadFromAKilledRecordingsFile) {
  // A .gdtrace without its End chunk (what SIGKILL leaves) read back through the reader.
  Trace t = small_trace();
  t.stopped_cleanly = false;
  const std::string path = std::string(GPUDIAG_BINARY_DIR) + "/tests/report/killed.gdtrace";
  write_gdtrace(t, path);
  const Trace back = load_trace(path);
  EXPECT_FALSE(back.stopped_cleanly);
  EXPECT_NE(summary(back).find(kUnclean), std::string::npos);
}

TEST(TraceWarnings, ImportedTracesCountAsComplete) {
  const Trace t = import_kineto_bytes(
      R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}])",
      "a.json");
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_TRUE(trace_warnings(t).empty());
}

TEST(ReportSarif, CarriesDroppedEventsTruncationAndIncompleteEvidenceAsNotifications) {
  Trace t = small_trace();
  t.dropped_events = 17;
  t.truncated = true;
  t.truncation_note = "file ends inside a chunk at byte 812";
  t.stopped_cleanly = false;
  t.complete_until_ns = 2000;
  SarifOptions options;
  options.tool_version = "9.9";
  const auto log = report_sarif(t, analyze(t), options);
  const auto& run = log["runs"][0];
  ASSERT_EQ(run["invocations"].size(), 1u);
  const auto& invocation = run["invocations"][0];
  EXPECT_EQ(invocation["executionSuccessful"], true);
  const auto& notes = invocation["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 3u) << notes.dump(2);
  EXPECT_NE(notes[0]["message"]["text"].get<std::string>().find("17 events were dropped"), std::string::npos);
  EXPECT_NE(notes[1]["message"]["text"].get<std::string>().find("byte 812"), std::string::npos);
  EXPECT_NE(notes[2]["message"]["text"].get<std::string>().find("the report judges the first 1.00 us"), std::string::npos);
  const auto& descriptors = run["tool"]["driver"]["notifications"];
  for (const auto& n : notes) {
    EXPECT_EQ(n["level"], "warning");
    EXPECT_EQ(descriptors.at(n["descriptor"]["index"].get<std::size_t>())["id"], n["descriptor"]["id"]);
  }
  EXPECT_EQ(run["tool"]["driver"]["version"], "9.9");  // the caller's options are kept
}

TEST(ReportSarif, ACompleteTraceHasASuccessfulInvocationWithoutNotifications) {
  const Trace t = small_trace();
  const auto log = report_sarif(t, analyze(t), {});
  const auto& invocation = log["runs"][0]["invocations"][0];
  EXPECT_EQ(invocation["executionSuccessful"], true);
  EXPECT_FALSE(invocation.contains("toolExecutionNotifications"));
  EXPECT_FALSE(log["runs"][0]["tool"]["driver"].contains("notifications"));
  std::ostringstream out;
  emit_report_sarif(out, t, analyze(t), {});
  EXPECT_EQ(nlohmann::json::parse(out.str()), log);
}

}  // namespace
}  // namespace gpudiag
