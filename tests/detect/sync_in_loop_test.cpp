// GD010 sync-in-loop: the share of the training loop the launching thread
// spends blocked in synchronisations.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(SyncInLoop, ShareOfTheLoopBlockedInSyncs) {
  Trace t = training_loop(10, 800'000);
  for (Sync& s : t.syncs) s.stack = stack_named(t, "loss_item");
  const auto f = only(detect(t), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("in the training loop (80.0%)"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "loss_item");
  DetectOptions lenient;
  lenient.sync_share = 0.9;
  EXPECT_TRUE(only(detect(t, lenient), "GD010").empty()) << "one sync per iteration, under the share";
}

// A data loader worker whose blocking copy waits for the device stalls
// itself; the thread that launches the step's work is what a sync holds up.
TEST(SyncInLoop, OnlySyncsOfTheThreadsThatLaunchTheLoopsWorkCount) {
  Trace t = training_loop(10, 800'000);
  for (const Kernel& k : std::vector<Kernel>(t.kernels))
    t.api_calls.push_back({.start_ns = k.start_ns - 1, .end_ns = k.start_ns, .name = t.intern("cudaLaunchKernel"),
                           .tid = 1});
  for (Sync& s : t.syncs) {
    s.tid = 2;
    t.api_calls.push_back({.start_ns = s.start_ns, .end_ns = s.end_ns, .name = t.intern("cudaMemcpy"), .tid = 2});
  }
  EXPECT_EQ(only(detect(t), "GD010").size(), 1u) << "no sync is on a launching thread: the trace may number them apart";
  t.syncs.push_back({.start_ns = 1, .end_ns = 2, .kind = SyncKind::Device, .tid = 1});
  EXPECT_TRUE(only(detect(t), "GD010").empty()) << "the syncs are a worker's";
  for (Sync& s : t.syncs) s.tid = 1;
  EXPECT_EQ(only(detect(t), "GD010").size(), 1u) << "the syncs are the launching thread's";
}

TEST(SyncInLoop, SyncsOfAProgramWithoutALoopAreNoSyncInALoop) {
  Trace t;
  for (int i = 0; i < 20; ++i) {
    kernel(t, 1000 * i, 1000 * i + 900, "spin");
    t.syncs.push_back({.start_ns = 1000u * i + 100, .end_ns = 1000u * i + 900, .kind = SyncKind::Device});
  }
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

// SeverityFollowsCost: below its rule's threshold (an option of `gpudiag report`)
// a finding is a note or nothing, and its message names the threshold.

TEST(SeverityFollowsCost, ManyCheapSyncsAnIterationAreANoteAndACostlyOneAWarning) {
  Trace cheap = training_loop(10, 10'000);  // 1% of each step
  for (int s = 0; s < 10; ++s)
    for (int k = 1; k < 4; ++k)
      cheap.syncs.push_back({.start_ns = 1'000'000ull * s + 200'000ull * k, .end_ns = 1'000'000ull * s + 200'000ull * k + 1'000,
                             .kind = SyncKind::Device, .device = 0});
  cheap.sort_by_time();
  const auto noted = only(detect(cheap), "GD010");
  ASSERT_EQ(noted.size(), 1u);
  EXPECT_EQ(noted[0].severity, Severity::Note);
  EXPECT_NE(noted[0].message.find("below the 10% of the loop at which this is a warning (--sync-share)"),
            std::string::npos)
      << noted[0].message;
  const auto one_cheap = only(detect(training_loop(10, 10'000)), "GD010");
  EXPECT_TRUE(one_cheap.empty()) << "one cheap sync a step, as loss.item(): " << one_cheap.front().message;
  const auto costly = only(detect(training_loop(10, 300'000)), "GD010");
  ASSERT_EQ(costly.size(), 1u);
  EXPECT_EQ(costly[0].severity, Severity::Warning);
}

// One profiled step shows no loop whose every iteration waits.
TEST(SeverityFollowsCost, OneProfiledStepIsNoLoopToSyncIn) {
  Trace t = training_loop(1, 300'000);
  t.ranges.push_back({.start_ns = 0, .end_ns = 1'000'000, .name = t.intern("ProfilerStep#6")});
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

}  // namespace
}  // namespace gpudiag
