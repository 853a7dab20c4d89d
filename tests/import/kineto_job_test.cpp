// A Kineto trace's place in a distributed job (its distributedInfo): a real
// two-rank CPU DDP job with gloo, each rank profiled (data/ddp-gloo-2, made
// by make_ddp_kineto.py with PyPI's torch), a single process's trace, and
// distributedInfo that says nothing sound.
#include <gtest/gtest.h>

#include <string>

#include "gpudiag/import/load_trace.h"

namespace gpudiag {
namespace {

TEST(KinetoJob, EachRankOfARealGlooJobKnowsItsRankWorldSizeAndBackend) {
  for (int rank : {0, 1}) {
    const Trace t = load_trace(IMPORT_TEST_DIR "/data/ddp-gloo-2/rank" + std::to_string(rank) + ".kineto.json.gz");
    ASSERT_TRUE(t.job.known()) << rank;
    EXPECT_EQ(t.job.rank, rank);
    EXPECT_EQ(t.job.world_size, 2);
    EXPECT_EQ(t.job.backend, "gloo");
    EXPECT_EQ(t.job.label(), "rank " + std::to_string(rank) + " of 2 (gloo)");
  }
}

TEST(KinetoJob, ASingleProcessTraceIsNoPlaceInAJob) {
  const Trace t = import_kineto_bytes(
      R"json({"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add",
          "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})json",
      "single.json");
  EXPECT_FALSE(t.job.known());
}

TEST(KinetoJob, DistributedInfoThatSaysNothingSoundIsNoPlace) {
  for (const char* info : {R"({"rank": 9, "world_size": 2})", R"({"rank": -3, "world_size": 2})",
                           R"({"rank": "one", "world_size": "two"})", R"([1, 2])", R"("gloo")",
                           R"({"rank": 1, "world_size": 99999999999999999999})"}) {
    const std::string json = std::string(R"({"distributedInfo": )") + info +
                             R"(, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1,
                                 "tid": 1, "ts": 1, "dur": 2}]})";
    try {
      const Trace t = import_kineto_bytes(json, "odd.json");
      EXPECT_FALSE(t.job.known()) << info << ": " << t.job.label();
    } catch (const TraceError& e) {  // refused as a whole is fine too; a crash is not
      SUCCEED() << info << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace gpudiag
