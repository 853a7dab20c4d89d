// A Kineto trace's place in a distributed job (its distributedInfo): a real
// two-rank CPU DDP job with gloo, each rank profiled (data/ddp-gloo-2, made
// by make_ddp_kineto.py with PyPI's torch), a single process's trace, and
// distributedInfo that says nothing sound; the host and the clock's offset
// to the epoch.
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

// Kineto's "baseTimeNanoseconds" is the system clock's time its "ts" count
// from: ts * 1000 + base is the epoch's time of each event.
TEST(KinetoJob, ARealTraceSaysItsHostAndItsClockAgainstTheEpoch) {
  const Trace t = load_trace(IMPORT_TEST_DIR "/data/ddp-gloo-2/rank0.kineto.json.gz");
  EXPECT_EQ(t.job.host, "vm");
  ASSERT_TRUE(t.job.epoch_offset_known);
  EXPECT_EQ(t.job.epoch_offset_ns, 1790857026000000000);
  EXPECT_EQ(t.job.epoch_offset_uncertainty_ns, 0u);
  // The job was profiled on 2026-11-28 (UTC), the day its traces were made.
  const std::int64_t begin = t.job.epoch_offset_ns + static_cast<std::int64_t>(t.begin_ns());
  EXPECT_GE(begin, 1795824000000000000);  // 2026-11-28T00:00:00Z
  EXPECT_LT(begin, 1795910400000000000);  // 2026-11-29T00:00:00Z
}

TEST(KinetoJob, NoOffsetIsSaidFromABaseThatIsNoTime) {
  for (const char* base : {R"("soon")", "-5", "1.5e300", "[1]", "null"}) {
    const Trace t = import_kineto_bytes(std::string(R"({"host_name": 7, "baseTimeNanoseconds": )") + base +
                                            R"(, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add",
                                                "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})",
                                        "odd.json");
    EXPECT_FALSE(t.job.epoch_offset_known) << base;
    EXPECT_EQ(t.job.host, "") << base;
  }
}

}  // namespace
}  // namespace gpudiag
