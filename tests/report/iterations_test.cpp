#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/analysis/iterations.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// A loop of `steps` iterations, each launching the same 20 kernels; the
// host syncs at the end of every step for `sync_ns` of the 1 ms step.
Trace training_loop(int steps, std::uint64_t sync_ns) {
  Trace t;
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t base = 1'000'000ull * s;
    for (int k = 0; k < 20; ++k) kernel(t, base + 40'000ull * k, base + 40'000ull * k + 30'000, "op" + std::to_string(k));
    if (sync_ns) t.syncs.push_back({.start_ns = base + 1'000'000 - sync_ns, .end_ns = base + 1'000'000 - 1,
                                    .kind = SyncKind::Device, .device = 0});
  }
  return t;
}

TEST(Iterations, TheRepeatingKernelSequenceMarksEachStep) {
  const auto it = detect_iterations(training_loop(6, 0));
  ASSERT_EQ(it.size(), 5u);  // the last, possibly partial, step is left out
  for (const Interval& i : it) EXPECT_EQ(i.length(), 1'000'000u);
}

TEST(Iterations, NoLoopNoIterations) {
  Trace t;
  for (int k = 0; k < 200; ++k) kernel(t, 1000ull * k, 1000ull * k + 10, "op" + std::to_string(k));
  EXPECT_TRUE(detect_iterations(t).empty());
  EXPECT_TRUE(detect_iterations(training_loop(2, 0)).empty());  // too few repetitions to call it a loop
}

TEST(SyncInLoop, ReportsTheSharePerIterationWhenTheLoopShows) {
  const auto f = only(detect(training_loop(6, 300'000)), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("per iteration (5 iterations"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("median 30.0%"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
