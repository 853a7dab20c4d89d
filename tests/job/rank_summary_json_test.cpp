// A rank's summary survives JSON (what a Dask worker hands back), and JSON
// that is not a summary is refused with a reason, never a crash.
#include <gtest/gtest.h>

#include "gpudiag/job/rank_summary.h"
#include "job_builder.h"

namespace gpudiag {
namespace {

TEST(RankSummaryJson, EveryFieldSurvivesTheRoundTrip) {
  RankSummary s = test::rank_running(3, 8, {.steps = 3});
  s.job.host = "node07";
  s.job.local_rank = 3;
  s.job.launcher = "torchrun";
  s.job.backend = "nccl";
  s.pid = 4242;
  s.begin_ns = 1'790'857'026'123'456'789ull;  // epoch ns: past what a double keeps exactly
  s.end_ns = s.begin_ns + 5;
  s.clock_uncertainty_ns = 120;
  s.warnings = {"the trace ends early"};
  s.findings.push_back(test::finding("GD008", Severity::Error, "out of memory", "forward"));
  s.failure = RankFailure{.kind = "crash", .time_ns = s.end_ns, .what = "SIGSEGV", .step = 2,
                          .stack = {Frame{.function = "f", .module = "m.so", .file = "", .line = 0, .address = 0x7f00}}};
  s.collectives[1].stack = s.failure->stack;
  s.collectives[2].unfinished = true;
  s.peaks.push_back({.device = 0, .bytes = 80ull << 30});
  s.gpu_time.push_back({.device = 0, .total_ns = 10, .idle_ns = 2, .computation_ns = 7, .communication_ns = 3,
                        .exposed_comm_ns = 1, .memcpy_ns = 1});
  const RankSummary back = rank_summary_from_json(nlohmann::json::parse(to_json(s).dump()));
  EXPECT_EQ(to_json(back), to_json(s));
  EXPECT_EQ(back.begin_ns, s.begin_ns);
  EXPECT_EQ(back.failure->stack.at(0).address, 0x7f00u);
  EXPECT_TRUE(back.collectives[2].unfinished);
  EXPECT_EQ(back.job.host, "node07");
}

TEST(RankSummaryJson, WhatIsNoSummaryIsRefusedWithAReason) {
  const nlohmann::json good = to_json(test::rank_running(0, 2, {.steps = 2}));
  const auto refused = [](const nlohmann::json& j) {
    try {
      rank_summary_from_json(j);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused(nlohmann::json::array()).find("not a gpudiag rank summary"), std::string::npos);
  nlohmann::json other_version = good;
  other_version["gpudiag_rank_summary"] = 99;
  EXPECT_NE(refused(other_version).find("version 99"), std::string::npos);
  nlohmann::json negative = good;
  negative["end_ns"] = "-5";
  EXPECT_NE(refused(negative).find("not a gpudiag rank summary"), std::string::npos);
  nlohmann::json wrong_type = good;
  wrong_type["collectives"][0]["bytes"] = "many";
  EXPECT_NE(refused(wrong_type).find("not a gpudiag rank summary"), std::string::npos);
  nlohmann::json missing = good;
  missing.erase("steps");
  EXPECT_NE(refused(missing).find("not a gpudiag rank summary"), std::string::npos);
  nlohmann::json backwards = good;
  backwards["steps"][0]["end_ns"] = "0";
  backwards["steps"][0]["begin_ns"] = "10";
  EXPECT_NE(refused(backwards).find("ends before it begins"), std::string::npos);
  EXPECT_EQ(refused(good), "accepted");
}

}  // namespace
}  // namespace gpudiag
