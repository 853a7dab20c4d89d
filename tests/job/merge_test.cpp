// merge_job on summaries built in code: each part of the job report, with
// the case it must name and the nearest case it must not.
#include <gtest/gtest.h>

#include "gpudiag/job/job_report.h"
#include "job_builder.h"

namespace gpudiag {
namespace {

using test::finding;
using test::LoopShape;
using test::ms;
using test::rank_running;

std::vector<RankSummary> healthy_job(int world, const LoopShape& shape = {}) {
  std::vector<RankSummary> ranks;
  for (int r = 0; r < world; ++r) ranks.push_back(rank_running(r, world, shape));
  return ranks;
}

TEST(JobRankList, RunsOfRanksAreRanges) {
  EXPECT_EQ(rank_list({0, 1, 2, 4, 5, 6, 7}), "0\u20132, 4\u20137");
  EXPECT_EQ(rank_list({3}), "3");
  EXPECT_EQ(rank_list({5, 1, 1}), "1, 5");
}

TEST(JobFindings, TheSameFindingOnEveryRankIsOneWithItsRanks) {
  auto ranks = healthy_job(8);
  for (int r = 0; r < 8; ++r)
    ranks[r].findings.push_back(
        finding("GD010", Severity::Warning, "the syncs cost at most 1" + std::to_string(r) + ".5% of the loop"));
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_EQ(job.findings.size(), 1u);
  EXPECT_EQ(job.findings[0].ranks.size(), 8u);
  EXPECT_EQ(job.findings[0].message_rank, 0);
  EXPECT_EQ(job.findings[0].finding.message, "the syncs cost at most 10.5% of the loop");
}

TEST(JobFindings, AFindingOnOneRankSaysThatRankOnly) {
  auto ranks = healthy_job(8);
  ranks[3].findings.push_back(finding("GD008", Severity::Error, "out of memory", "forward"));
  ranks[5].findings.push_back(finding("GD010", Severity::Note, "syncs", "train_step"));
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_EQ(job.findings.size(), 2u);
  EXPECT_EQ(job.findings[0].finding.rule_id, "GD008");  // errors first
  EXPECT_EQ(job.findings[0].ranks, std::vector<std::int32_t>{3});
  std::ostringstream out;
  print_job_summary(out, job, false);
  EXPECT_NE(out.str().find("on rank 3 only"), std::string::npos) << out.str();
}

TEST(JobFindings, OneRuleAtTwoSitesIsTwoFindings) {
  auto ranks = healthy_job(2);
  ranks[0].findings.push_back(finding("GD007", Severity::Warning, "leak of 4 MiB", "make_buffer"));
  ranks[1].findings.push_back(finding("GD007", Severity::Warning, "leak of 8 MiB", "load_batch"));
  ranks[1].findings.push_back(finding("GD007", Severity::Warning, "leak of 4 MiB", "make_buffer"));
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_EQ(job.findings.size(), 2u);
  EXPECT_EQ(job.findings[0].ranks, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(job.findings[1].ranks, std::vector<std::int32_t>{1});
}

TEST(JobFindings, TheHighestSeverityOfAnyRankIsTheFindings) {
  auto ranks = healthy_job(2);
  ranks[0].findings.push_back(finding("GD002", Severity::Note, "Float64 0.1%", "f"));
  ranks[1].findings.push_back(finding("GD002", Severity::Warning, "Float64 30%", "f"));
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_EQ(job.findings.size(), 1u);
  EXPECT_EQ(job.findings[0].finding.severity, Severity::Warning);
  EXPECT_EQ(worst_severity(job), Severity::Warning);
}

TEST(JobRanks, ARankOfTheWorldWithoutATraceIsMissing) {
  auto ranks = healthy_job(4);
  ranks.erase(ranks.begin() + 2);
  const JobReport job = merge_job(std::move(ranks));
  EXPECT_EQ(job.missing_ranks, std::vector<std::int32_t>{2});
  ASSERT_FALSE(job.facts.empty());
  EXPECT_EQ(job.facts[0].id, "missing-ranks");
  EXPECT_NE(job.facts[0].message.find("rank 2 of 4 left no trace"), std::string::npos) << job.facts[0].message;
  EXPECT_TRUE(merge_job(healthy_job(4)).missing_ranks.empty());
}

TEST(JobRanks, TwoTracesOfOneRankOrTwoWorldSizesAreProblems) {
  auto ranks = healthy_job(2);
  ranks.push_back(rank_running(1, 2));
  ranks.back().path = "again/rank1.gdtrace";
  EXPECT_EQ(merge_job(ranks).problems.size(), 1u);
  auto other = healthy_job(2);
  other[1].job.world_size = 4;
  const JobReport job = merge_job(std::move(other));
  ASSERT_EQ(job.problems.size(), 1u);
  EXPECT_NE(job.problems[0].find("different world sizes"), std::string::npos);
}

TEST(JobRanks, TracesThatDoNotSayTheirRankAreNumberedByPlace) {
  auto ranks = healthy_job(2);
  for (auto& r : ranks) r.job = JobPlace{};
  ranks[0].findings.push_back(finding("GD010", Severity::Warning, "syncs"));
  ranks[1].findings.push_back(finding("GD010", Severity::Warning, "syncs"));
  const JobReport job = merge_job(std::move(ranks));
  EXPECT_FALSE(job.ranked);
  std::ostringstream out;
  print_job_summary(out, job, false);
  EXPECT_NE(out.str().find("on traces 0\u20131"), std::string::npos) << out.str();
}

TEST(JobRanks, AProcessWithoutARankBesideTheRanksIsLeftOutAndSaid) {
  auto ranks = healthy_job(2);
  RankSummary launcher;
  launcher.path = "run/launcher.gdtrace";
  launcher.findings.push_back(finding("GD007", Severity::Warning, "leak", "main"));
  ranks.push_back(launcher);
  const JobReport job = merge_job(std::move(ranks));
  EXPECT_TRUE(job.ranked);
  EXPECT_EQ(job.ranks.size(), 2u);
  EXPECT_TRUE(job.findings.empty());
  ASSERT_EQ(job.problems.size(), 1u);
  EXPECT_NE(job.problems[0].find("run/launcher.gdtrace says no rank"), std::string::npos);
}

// Rank 3 runs out of memory in step 5; the others go on to step 5's
// all_reduce and wait in it until the collective library's timeout (600 s),
// then exit with an error of their own.
std::vector<RankSummary> job_where_rank_3_fails() {
  auto ranks = healthy_job(8, {.steps = 5});
  for (int r = 0; r < 8; ++r) {
    RankSummary& s = ranks[r];
    if (r == 3) {
      s.failure = RankFailure{.kind = "out-of-memory", .time_ns = ms(530), .what = "GD008 out of memory asking for 2 GiB",
                              .step = 5, .stack = {}};
      s.end_ns = ms(530);
      s.exit_status = -1;
      continue;
    }
    RankCollective waiting = s.collectives.back();
    waiting.seq = 5;
    waiting.begin_ns = ms(580);
    waiting.end_ns = ms(580 + 600'000);
    s.collectives.push_back(waiting);
    s.end_ns = ms(581 + 600'000);
    s.exit_status = 1;
    s.failure = RankFailure{.kind = "exit", .time_ns = s.end_ns, .what = "exit status 1", .step = -1, .stack = {}};
  }
  return ranks;
}

TEST(JobFirstFailure, TheEarliestFailureIsTheCauseAndTheOthersWaitedForIt) {
  const JobReport job = merge_job(job_where_rank_3_fails());
  ASSERT_TRUE(job.first_failure);
  EXPECT_EQ(job.first_failure->rank, 3);
  EXPECT_EQ(job.first_failure->failure.kind, "out-of-memory");
  ASSERT_EQ(job.first_failure->others.size(), 7u);
  for (const RankActivity& a : job.first_failure->others) {
    EXPECT_EQ(a.state, "collective");
    EXPECT_EQ(a.collective, "all_reduce #5 (group 0)");
    EXPECT_EQ(a.waited_ns, ms(600'000));
  }
  EXPECT_EQ(job.first_failure->message,
            "rank 3 failed first in step 5: GD008 out of memory asking for 2 GiB. Then ranks 0\u20132, 4\u20137 waited in "
            "all_reduce #5 (group 0) for 600.00 s");
  ASSERT_FALSE(job.facts.empty());
  EXPECT_EQ(job.facts[0].id, "first-failure");
  EXPECT_EQ(job.facts[0].severity, Severity::Error);
}

TEST(JobFirstFailure, AKinetoTraceThatEndsFirstWhileItsPeersWaitStoppedFirst) {
  auto ranks = job_where_rank_3_fails();
  for (auto& s : ranks) s.failure.reset(), s.exit_status = -1;  // Kineto traces do not say how a process ended
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_TRUE(job.first_failure);
  EXPECT_EQ(job.first_failure->rank, 3);
  EXPECT_EQ(job.first_failure->failure.kind, "stopped");
  EXPECT_NE(job.first_failure->message.find("rank 3 stopped first"), std::string::npos) << job.first_failure->message;
}

TEST(JobFirstFailure, RanksThatEndTogetherHaveNoFirstFailure) {
  auto ranks = healthy_job(4);
  ranks[1].end_ns -= ms(1);  // one trace ends a moment earlier, and no one waits for it
  EXPECT_FALSE(merge_job(std::move(ranks)).first_failure);
}

// Every step: a 4-byte all_reduce of the loss for logging, then DDP's
// gradient bucket, numbered by their place in each trace.
std::vector<RankSummary> job_logging_the_loss(int world, int skipping_rank, int skipped_step) {
  std::vector<RankSummary> ranks;
  for (int r = 0; r < world; ++r) {
    RankSummary s = rank_running(r, world, {.steps = 8});
    std::vector<RankCollective> calls;
    for (const RankCollective& bucket : s.collectives) {
      if (!(r == skipping_rank && bucket.seq == skipped_step)) {
        RankCollective loss = bucket;
        loss.bytes = 4;
        loss.end_ns = loss.begin_ns + ms(1);
        loss.stack = {Frame{.function = "log_loss", .module = "", .file = "train.py", .line = 71, .address = 0}};
        calls.push_back(loss);
      }
      calls.push_back(bucket);
    }
    for (std::size_t i = 0; i < calls.size(); ++i) calls[i].seq = static_cast<std::int64_t>(i), calls[i].seq_from_source = false;
    s.collectives = calls;
    ranks.push_back(s);
  }
  return ranks;
}

TEST(JobDesync, ARankThatSkipsACollectiveIsNamedAtTheFirstDifference) {
  const JobReport job = merge_job(job_logging_the_loss(4, 1, 4));
  ASSERT_TRUE(job.desync);
  EXPECT_EQ(job.desync->seq, 8);
  EXPECT_EQ(job.desync->group, "0");
  ASSERT_EQ(job.desync->sides.size(), 2u);
  EXPECT_EQ(job.desync->sides[0].ranks, (std::vector<std::int32_t>{0, 2, 3}));
  EXPECT_EQ(job.desync->sides[0].call, "all_reduce of 4 B");
  EXPECT_EQ(job.desync->sides[1].ranks, std::vector<std::int32_t>{1});
  EXPECT_EQ(job.desync->sides[1].call, "all_reduce of 4.00 MiB");
  EXPECT_NE(job.desync->message.find("at log_loss (train.py:71)"), std::string::npos) << job.desync->message;
}

TEST(JobDesync, RanksThatCallTheSameCollectivesHaveNone) {
  EXPECT_FALSE(merge_job(job_logging_the_loss(4, -1, 0)).desync);
}

TEST(JobDesync, ARankThatStoppedEarlyIsNoDesync) {
  auto ranks = job_logging_the_loss(4, -1, 0);
  ranks[2].collectives.resize(5);
  EXPECT_FALSE(merge_job(std::move(ranks)).desync);
}

TEST(JobDesync, PlacesInProfilesThatStartAtDifferentStepsAreNotCompared) {
  auto ranks = job_logging_the_loss(4, 1, 4);
  for (RankStep& s : ranks[2].steps) s.number += 3;  // rank 2's profile began three steps later
  EXPECT_FALSE(merge_job(std::move(ranks)).desync);
}

TEST(JobStraggler, TheRankTheOthersWaitForIsNamedWithWhatGrew) {
  auto ranks = healthy_job(4, {.steps = 10, .step_ms = 100, .own_ms = 40, .data_loading_ms = 10});
  // Rank 2's data loading takes 55 ms more: its own work is 95 ms, and the
  // others wait 60 ms in each all_reduce instead of 5.
  ranks[2] = rank_running(2, 4, {.steps = 10, .step_ms = 100, .own_ms = 95, .data_loading_ms = 65});
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_TRUE(job.straggler);
  EXPECT_EQ(job.straggler->rank, 2);
  EXPECT_EQ(job.straggler->why, "data loading");
  EXPECT_EQ(job.straggler->why_excess_ns, ms(55));
  EXPECT_EQ(job.straggler->others_wait_ns, ms(60));
}

TEST(JobStraggler, RanksThatWorkAlikeHaveNone) {
  auto ranks = healthy_job(4, {.steps = 10, .step_ms = 100, .own_ms = 40, .data_loading_ms = 10});
  ranks[1] = rank_running(1, 4, {.steps = 10, .step_ms = 100, .own_ms = 44, .data_loading_ms = 12});
  EXPECT_FALSE(merge_job(std::move(ranks)).straggler);
}

TEST(JobStraggler, TheGpuTimeThatGrewIsNamed) {
  auto ranks = healthy_job(4, {.steps = 10, .step_ms = 100, .own_ms = 40, .data_loading_ms = 5});
  ranks[0] = rank_running(0, 4, {.steps = 10, .step_ms = 100, .own_ms = 90, .data_loading_ms = 5});
  for (RankStep& s : ranks[0].steps) s.gpu_busy_ns = ms(80);
  for (int r = 1; r < 4; ++r)
    for (RankStep& s : ranks[r].steps) s.gpu_busy_ns = ms(30);
  const JobReport job = merge_job(std::move(ranks));
  ASSERT_TRUE(job.straggler);
  EXPECT_EQ(job.straggler->rank, 0);
  EXPECT_EQ(job.straggler->why, "GPU time");
}

TEST(JobOutputs, JsonAndSarifCarryTheJobsFacts) {
  const JobReport job = merge_job(job_where_rank_3_fails());
  const nlohmann::json j = job_json(job);
  EXPECT_EQ(j["job"]["first_failure"]["rank"], 3);
  EXPECT_EQ(j["ranks"].size(), 8u);
  std::ostringstream sarif;
  emit_job_sarif(sarif, job, {});
  const nlohmann::json s = nlohmann::json::parse(sarif.str());
  bool found = false;
  for (const auto& r : s["runs"][0]["results"]) found |= r["ruleId"] == "first-failure" && r["level"] == "error";
  EXPECT_TRUE(found) << sarif.str();
}

TEST(JobOutputs, TheJobPageEmbedsTheRanksAndTheirLinksAsData) {
  const JobReport job = merge_job(job_where_rank_3_fails());
  std::ostringstream html;
  std::vector<std::string> pages(job.ranks.size(), "");
  pages[3] = "job.html.ranks/rank3.gdtrace.html";
  write_job_html(html, job, pages);
  const std::string page = html.str();
  EXPECT_NE(page.find("job.html.ranks/rank3.gdtrace.html"), std::string::npos);
  EXPECT_NE(page.find("rank 3 failed first"), std::string::npos);
  EXPECT_EQ(page.find("<!-- gpudiag:"), std::string::npos);  // every marker replaced
}

}  // namespace
}  // namespace gpudiag
