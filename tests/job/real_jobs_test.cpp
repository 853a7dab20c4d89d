// The job report on real jobs: four-rank CPU DDP runs with gloo, each rank
// profiled by PyTorch (tests/import/data/ddp-gloo-<version>/, whose READMEs
// say what really happened). Healthy: nothing. A rank with a slow Dataset:
// the straggler, by its data loading. A rank that skipped a collective: the
// desync, and the rank that died without a trace. A rank that raised: it
// stopped first, and the others waited for it in the next all_reduce.
#include <gtest/gtest.h>

#include <set>

#include "gpudiag/job/analyse_ranks.h"
#include "gpudiag/job/job_report.h"
#include "run_command.h"

namespace gpudiag {
namespace {

std::string job_dir(const std::string& version) {
  return std::string(GPUDIAG_SOURCE_DIR) + "/tests/import/data/ddp-gloo-" + version;
}

JobReport report_of(const std::string& version, unsigned workers = 2) {
  const RankAnalysis ranks = analyse_ranks(expand_trace_inputs({job_dir(version)}), {.load = {}, .workers = workers,
                                                                                      .html_dir = {}});
  EXPECT_TRUE(ranks.errors.empty());
  return merge_job(ranks.summaries);
}

TEST(RealJobs, AHealthyJobHasNothingToSay) {
  const JobReport job = report_of("healthy");
  EXPECT_EQ(job.ranks.size(), 4u);
  EXPECT_EQ(job.world_size, 4);
  EXPECT_TRUE(job.facts.empty()) << job.facts[0].message;
  EXPECT_TRUE(job.problems.empty());
  for (const RankSummary& s : job.ranks) {
    EXPECT_EQ(s.clock, "epoch");
    EXPECT_EQ(s.steps.size(), 9u);
    EXPECT_EQ(s.collectives.size(), 18u);  // 16 all_reduce and 2 broadcast
  }
}

TEST(RealJobs, TheRankWithASlowDatasetIsTheStragglerByItsDataLoading) {
  const JobReport job = report_of("straggler");
  ASSERT_TRUE(job.straggler);
  EXPECT_EQ(job.straggler->rank, 2);
  EXPECT_EQ(job.straggler->why, "data loading");
  EXPECT_GT(job.straggler->others_wait_ns, 3 * job.straggler->others_own_ns);
  EXPECT_FALSE(job.first_failure);
  EXPECT_FALSE(job.desync);
}

TEST(RealJobs, TheRankThatSkippedACollectiveIsTheDesyncAndTheRankThatDiedIsMissing) {
  const JobReport job = report_of("desync");
  EXPECT_EQ(job.missing_ranks, std::vector<std::int32_t>{0});
  ASSERT_TRUE(job.desync);
  ASSERT_EQ(job.desync->sides.size(), 2u);
  EXPECT_EQ(job.desync->sides[0].ranks, (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(job.desync->sides[0].call, "all_reduce of 4 B");  // the loss, which rank 1 skipped in step 4
  EXPECT_EQ(job.desync->sides[1].ranks, std::vector<std::int32_t>{1});
  ASSERT_TRUE(job.first_failure);
  EXPECT_TRUE(job.first_failure->message.starts_with("rank 0 left no trace and may have failed first"))
      << job.first_failure->message;
}

TEST(RealJobs, TheRankThatRaisedStoppedFirstAndTheOthersWaitedForIt) {
  const JobReport job = report_of("raise");
  ASSERT_TRUE(job.first_failure);
  EXPECT_EQ(job.first_failure->rank, 3);
  EXPECT_EQ(job.first_failure->failure.kind, "stopped");
  EXPECT_EQ(job.first_failure->failure.step, 5);
  ASSERT_EQ(job.first_failure->others.size(), 3u);
  for (const RankActivity& a : job.first_failure->others) {
    EXPECT_EQ(a.state, "collective") << a.rank;
    EXPECT_GT(a.waited_ns, 3'000'000'000u) << a.rank;  // until gloo saw rank 3's connection close
  }
  EXPECT_FALSE(job.desync);
  EXPECT_FALSE(job.straggler);
  EXPECT_TRUE(job.missing_ranks.empty());
}

TEST(RealJobs, OneWorkerOrTwoMakeTheSameReport) {
  EXPECT_EQ(job_json(report_of("raise", 1)), job_json(report_of("raise", 2)));
}

TEST(RealJobs, TheCommandExitsOnTheJobsErrorsAndWritesSarif) {
  const std::string gpudiag = GPUDIAG_EXE;
  EXPECT_EQ(test::run_command(gpudiag + " report " + job_dir("healthy")).status, 0);
  const test::CommandResult raise = test::run_command(gpudiag + " report " + job_dir("raise"));
  EXPECT_EQ(raise.status, 1) << raise.out;
  EXPECT_NE(raise.out.find("rank 3 stopped first in step 5"), std::string::npos) << raise.out;
  const test::CommandResult sarif = test::run_command(gpudiag + " report --sarif " + job_dir("desync"), false);
  const nlohmann::json log = nlohmann::json::parse(sarif.out);
  std::set<std::string> ids;
  for (const auto& r : log["runs"][0]["results"]) ids.insert(r["ruleId"].get<std::string>());
  EXPECT_TRUE(ids.count("desync") && ids.count("missing-ranks") && ids.count("first-failure")) << sarif.out;
  const test::CommandResult glob =
      test::run_command(gpudiag + " report --json '" + job_dir("healthy") + "/rank[01].kineto.json.gz'", false);
  EXPECT_EQ(nlohmann::json::parse(glob.out)["job"]["missing_ranks"], (std::vector<int>{2, 3}));
}

}  // namespace
}  // namespace gpudiag
