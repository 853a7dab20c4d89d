// Terminal summary, JSON and HTML outputs.
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "gpudiag/emit.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

Trace sample_trace() {
  Trace t;
  t.path = "sample.gdtrace";
  t.source = TraceSource::Gdtrace;
  const StackId s = stack_named(t, "make_weights", "unet.cpp", 42);
  alloc(t, 1000, 0x1000, 1 << 20, 0, s);
  alloc(t, 2000, 0x200000, 4 << 20, 0, stack_named(t, "activations"));
  free_at(t, 5000, 0x200000);
  kernel(t, 1500, 4000, "void gemm<double>(double*)");
  return t;
}

TEST(Summary, ShowsFindingsMemoryTimeAndDroppedEvents) {
  Trace t = sample_trace();
  t.dropped_events = 17;
  t.truncated = true;
  t.truncation_note = "file ends inside a chunk at byte 812";
  std::ostringstream out;
  print_summary(out, t, analyze(t), {});
  const std::string s = out.str();
  EXPECT_NE(s.find("17 events were dropped"), std::string::npos) << s;
  EXPECT_NE(s.find("file ends inside a chunk at byte 812"), std::string::npos);
  EXPECT_NE(s.find("GD002 float64-leak x1"), std::string::npos);
  EXPECT_NE(s.find("GD007 memory-leak x1"), std::string::npos);
  EXPECT_NE(s.find("device 0: peak 5.00 MiB"), std::string::npos);
  EXPECT_NE(s.find("at make_weights (unet.cpp:42)"), std::string::npos);
  EXPECT_EQ(s.find("\x1b["), std::string::npos);  // no colour unless asked
  std::ostringstream coloured;
  print_summary(coloured, t, analyze(t), {.color = true});
  EXPECT_NE(coloured.str().find("\x1b["), std::string::npos);
}

// A rank's trace says its place in the job in the summary and the JSON.
TEST(Summary, SaysTheRankOfADistributedJob) {
  Trace t;
  kernel(t, 0, 1000, "k");
  t.job.rank = 3, t.job.world_size = 8, t.job.backend = "nccl";
  const Report r = analyze(t);
  std::ostringstream out;
  print_summary(out, t, r, {});
  EXPECT_NE(out.str().find("rank 3 of 8 (nccl) of a distributed job"), std::string::npos) << out.str();
  const nlohmann::json j = report_json(t, r);
  EXPECT_EQ(j["trace"]["job"], (nlohmann::json{{"rank", 3}, {"world_size", 8}, {"backend", "nccl"}}));
  t.job = {};
  std::ostringstream alone;
  print_summary(alone, t, analyze(t), {});
  EXPECT_EQ(alone.str().find("distributed job"), std::string::npos) << alone.str();
  EXPECT_FALSE(report_json(t, analyze(t))["trace"].contains("job"));
}

// What a recorded trace says of its process: its local rank, the launcher
// whose variables said its place, its host, the status it exited with; each
// only when said.
TEST(Summary, SaysTheLocalRankLauncherHostAndExitStatusWhenTheTraceSaysThem) {
  Trace t;
  kernel(t, 0, 1000, "k");
  t.pid = 4242;
  t.job.rank = 3, t.job.world_size = 8, t.job.local_rank = 1, t.job.launcher = "slurm", t.job.host = "node-17";
  t.exit_status = 3;
  const Report r = analyze(t);
  std::ostringstream out;
  print_summary(out, t, r, {});
  EXPECT_NE(out.str().find("  rank 3 of 8 of a distributed job, local rank 1, launcher slurm, host node-17\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("  the process exited with status 3\n"), std::string::npos) << out.str();
  nlohmann::json j = report_json(t, r);
  EXPECT_EQ(j["trace"]["job"], (nlohmann::json{{"rank", 3}, {"world_size", 8}, {"backend", ""}, {"local_rank", 1},
                                               {"launcher", "slurm"}}));
  EXPECT_EQ(j["trace"]["host"], "node-17");
  EXPECT_EQ(j["trace"]["exit_status"], 3);

  // A process of no job still says its host; a trace that does not say its
  // exit status (a crash, a trace from before it) says none.
  t.job = {};
  t.job.host = "laptop";
  t.exit_status = -1;
  std::ostringstream alone;
  print_summary(alone, t, analyze(t), {});
  EXPECT_NE(alone.str().find("  host laptop, pid 4242\n"), std::string::npos) << alone.str();
  EXPECT_EQ(alone.str().find("exited"), std::string::npos) << alone.str();
  j = report_json(t, analyze(t));
  EXPECT_FALSE(j["trace"].contains("job"));
  EXPECT_EQ(j["trace"]["host"], "laptop");
  EXPECT_FALSE(j["trace"].contains("exit_status"));
  t.job = {};
  std::ostringstream nothing;
  print_summary(nothing, t, analyze(t), {});
  EXPECT_EQ(nothing.str().find("\n  host "), std::string::npos) << nothing.str();
  EXPECT_FALSE(report_json(t, analyze(t))["trace"].contains("host"));
}

TEST(Summary, NamesTheCallSitesAtThePeakWithoutParameterLists) {
  Trace t;
  Stack s;
  for (const char* fn : {"gdrt::make_tensor(std::vector<long> const&, gdrt::DType)",
                         "gdrt::(anonymous namespace)::conv2d(gdrt::Tensor const&) const", "train_step()"}) {
    StackFrame f;
    f.function = t.intern(fn);
    s.frames.push_back(f);
  }
  alloc(t, 10, 0x1000, 4096, 0, t.add_stack(std::move(s)));
  std::ostringstream out;
  print_summary(out, t, analyze(t), {});
  EXPECT_NE(out.str().find("from gdrt::make_tensor <- gdrt::(anonymous namespace)::conv2d <- train_step\n"),
            std::string::npos)
      << out.str();
}

// GD002 and GD007 are warnings, GD004 an error: the error leads, in the
// summary and in the page's data alike, whatever the rule ids say.
TEST(Summary, ErrorsComeBeforeWarnings) {
  Trace t = sample_trace();
  alloc(t, 6000, 0x900000, 4096, 0);
  free_at(t, 6100, 0x900000);
  t.memsets.push_back({.start_ns = 6200, .end_ns = 6300, .addr = 0x900100, .bytes = 16, .device = 0});
  const Report r = analyze(t);
  std::ostringstream out;
  print_summary(out, t, r, {});
  const std::string s = out.str();
  ASSERT_NE(s.find("GD004 premature-free"), std::string::npos) << s;
  ASSERT_NE(s.find("GD002 float64-leak"), std::string::npos) << s;
  EXPECT_LT(s.find("GD004 premature-free"), s.find("GD002 float64-leak")) << s;
  EXPECT_LT(s.find("GD004 premature-free"), s.find("GD007 memory-leak")) << s;
  const auto groups = findings_by_rule(r);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].front()->rule_id, "GD004");
  EXPECT_EQ(groups[1].front()->rule_id, "GD002");
  EXPECT_EQ(groups[2].front()->rule_id, "GD007");
  const auto data = html_data(t, r);
  EXPECT_EQ(data["findings"][0]["rule"], "GD004");
  EXPECT_EQ(data["findings"].back()["rule"], "GD007");
}

TEST(Html, GpuTimeIsLabelledAsTheSummaryLabelsIt) {
  Trace t = sample_trace();
  kernel(t, 5000, 6000, "gdrt::binary", kHostDevice);
  const auto data = html_data(t, analyze(t));
  ASSERT_EQ(data["gpu_time"].size(), 2u);
  EXPECT_EQ(data["gpu_time"][0]["label"], "host");
  EXPECT_EQ(data["gpu_time"][1]["label"], "device 0");
}

TEST(Summary, NoDroppedLineWhenNothingWasDropped) {
  const Trace t = sample_trace();
  std::ostringstream out;
  print_summary(out, t, analyze(t), {});
  EXPECT_EQ(out.str().find("dropped"), std::string::npos);
}

TEST(Json, HoldsFindingsMemoryAndGpuTime) {
  const Trace t = sample_trace();
  const auto j = report_json(t, analyze(t));
  EXPECT_EQ(j["trace"]["source"], "gdtrace");
  ASSERT_EQ(j["memory"].size(), 1u);
  EXPECT_EQ(j["memory"][0]["peak_bytes"], 5u << 20);
  EXPECT_EQ(j["memory"][0]["live_at_end_bytes"], 1u << 20);
  EXPECT_EQ(j["gpu_time"][0]["busy_ns"], 2500u);
  bool saw_gd002 = false;
  for (const auto& f : j["findings"]) saw_gd002 |= f["rule"] == "GD002" && f["name"] == "float64-leak";
  EXPECT_TRUE(saw_gd002);
}

// The JSON sums the collectives per collective and group; it lists none.
TEST(Json, SumsTheCollectivesPerOpAndGroup) {
  Trace t = sample_trace();
  const auto add = [&t](const char* op, const char* group, std::uint64_t bytes, std::uint64_t begin, std::uint64_t end,
                        bool unfinished = false) {
    t.collectives.push_back({.op = t.intern(op), .group = t.intern(group), .bytes = bytes, .begin_ns = begin, .end_ns = end,
                             .unfinished = unfinished});
  };
  add("all_reduce", "0", 1000, 100, 300);
  add("all_reduce", "0", 0, 400, 450);
  add("all_reduce", "1", 64, 500, 510);
  add("broadcast", "", 8, 600, 900, true);
  const auto j = report_json(t, analyze(t))["collectives"];
  EXPECT_EQ(j["count"], 4u);
  EXPECT_EQ(j["unfinished"], 1u);
  EXPECT_EQ(j["bytes"], 1072u);
  EXPECT_EQ(j["with_bytes"], 3u);
  EXPECT_EQ(j["total_ns"], 560u);
  ASSERT_EQ(j["by_op"].size(), 3u);
  EXPECT_EQ(j["by_op"][0], (nlohmann::json{{"op", "all_reduce"}, {"group", "0"}, {"count", 2}, {"unfinished", 0},
                                           {"bytes", 1000}, {"with_bytes", 1}, {"total_ns", 250}}));
  EXPECT_EQ(j["by_op"][1]["group"], "1");
  EXPECT_EQ(j["by_op"][2]["op"], "broadcast");
  EXPECT_TRUE(j["by_op"][2]["group"].is_null()) << "not said";
  EXPECT_EQ(report_json(sample_trace(), analyze(sample_trace()))["collectives"]["count"], 0u);
}

TEST(Sarif, RuntimeStacksBecomeLocations) {
  const Trace t = sample_trace();
  const Report r = analyze(t);
  const auto sarif = to_sarif(r.findings, {});
  const auto& results = sarif["runs"][0]["results"];
  bool located = false;
  for (const auto& res : results)
    if (res["ruleId"] == "GD007")
      located = res.dump().find("unet.cpp") != std::string::npos;
  EXPECT_TRUE(located) << results.dump(2);
}

TEST(Html, ScriptJsonEscapesEverythingThatCouldEndTheElement) {
  nlohmann::json j = {{"name", "</script><script>alert(1)</script><!-- \u2028\u2029 & >"}};
  const std::string s = json_for_script(j);
  EXPECT_EQ(s.find('<'), std::string::npos);
  EXPECT_EQ(s.find('>'), std::string::npos);
  EXPECT_EQ(s.find('&'), std::string::npos);
  EXPECT_EQ(s.find("\xe2\x80\xa8"), std::string::npos);
  EXPECT_EQ(s.find("\xe2\x80\xa9"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(s), j);  // and it still means the same
  // Invalid UTF-8 from a kernel name does not throw.
  EXPECT_NO_THROW(json_for_script(nlohmann::json{{"k", std::string("bad\xff")}}));
}

TEST(Html, OnePageWithTheDataAndNoNetwork) {
  Trace t = sample_trace();
  kernel(t, 4100, 4200, "<img src=x onerror=alert(1)>");
  std::ostringstream out;
  write_html(out, t, analyze(t));
  const std::string page = out.str();
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("<img src=x"), std::string::npos);  // only ever as escaped data
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("src=\""), std::string::npos);
  EXPECT_NE(page.find("id=\"gd-data\""), std::string::npos);
  EXPECT_NE(page.find("float64-leak"), std::string::npos);
}

TEST(Html, LargeTracesAreDownsampledToABoundedNumberOfSeries) {
  Trace t;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    alloc(t, 10 * i, 0x1000 + 0x1000 * i, 100 + i, 0);
    if (i % 2) free_at(t, 10 * i + 15, 0x1000 + 0x1000 * i);
  }
  HtmlOptions o;
  o.max_series = 50;
  o.max_points = 300;
  const auto data = html_data(t, analyze(t), o);
  ASSERT_EQ(data["devices"].size(), 1u);
  const auto& d = data["devices"][0];
  EXPECT_EQ(d["series"].size(), 50u);
  EXPECT_EQ(d["expected_series"], 51u);
  EXPECT_LE(d["other"].size(), 302u);
  EXPECT_EQ(d["other_count"], 4950u);
  // The largest (bytes x lifetime) allocations are the ones kept: long-lived ones, never the 15 ns temporaries.
  for (const auto& s : d["series"]) EXPECT_TRUE(s["live_at_end"].get<bool>()) << s.dump();
}

// Downsampled, the merged series keeps each bucket's peak but not over a
// gap: where nothing is live for a while, it says so.
TEST(Html, AMergedPeakDoesNotLastOverAGap) {
  Trace t;
  alloc(t, 0, 0x10000000, 1 << 30, 0);  // the one drawn on its own
  for (std::uint64_t i = 0; i < 1000; ++i) {
    alloc(t, 1000 + 10 * i, 0x1000 + 0x1000 * i, 4096, 0);
    free_at(t, 1000 + 10 * i + 5, 0x1000 + 0x1000 * i);
  }
  alloc(t, 10'000'000, 0x2000000, 4096, 0);  // 10 ms later
  HtmlOptions o;
  o.max_series = 1;
  o.max_points = 100;
  const auto data = html_data(t, analyze(t), o);
  const auto& other = data["devices"][0]["other"];
  ASSERT_LE(other.size(), 101u);
  std::uint64_t in_gap = 1;
  for (const auto& p : other)
    if (p[0].get<double>() <= 5000) in_gap = p[1];  // us: halfway through the gap
  EXPECT_EQ(in_gap, 0u) << other.dump();
}

}  // namespace
}  // namespace gpudiag

namespace gpudiag {
namespace {

// What `gpudiag trace` calls at the end: the summary, and the HTML beside the trace.
TEST(SummarizeAfterTrace, PrintsTheSummaryAndWritesTheHtmlBesideTheTrace) {
  const auto dir = std::filesystem::path(GPUDIAG_BINARY_DIR) / "tests" / "report" / "after_trace";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.gdtrace").string();
  std::filesystem::remove(path + ".html");
  write_gdtrace(sample_trace(), path);
  std::ostringstream out;
  EXPECT_EQ(summarize_after_trace(path, out), path + ".html");
  EXPECT_NE(out.str().find("GD002 float64-leak"), std::string::npos) << out.str();
  EXPECT_TRUE(std::filesystem::exists(path + ".html"));
  std::ostringstream bad;
  EXPECT_EQ(summarize_after_trace((dir / "missing.gdtrace").string(), bad), "");
  EXPECT_NE(bad.str().find("cannot summarize"), std::string::npos);
}

}  // namespace
}  // namespace gpudiag
