#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/import/load_trace.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(GpuTime, MergesOverlapAcrossStreamsAndSplitsCategories) {
  Trace t;
  kernel(t, 100, 200, "gemm", 0, 1);
  kernel(t, 150, 250, "relu", 0, 2);        // overlaps gemm on another stream
  kernel(t, 300, 320, "ncclAllReduce", 0, 3);  // communication
  t.memsets.push_back({.start_ns = 240, .end_ns = 260, .device = 0});
  Memcpy c = copy(400, 500, CopyKind::HtoD, 64, true);
  t.memcpys.push_back(c);
  Memcpy c2 = copy(310, 330, CopyKind::DtoH, 64, true);  // half hidden by nccl
  t.memcpys.push_back(c2);
  const auto g = gpu_time_breakdown(t);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].total_ns, 400u);
  EXPECT_EQ(g[0].computation_ns, 160u);  // [100,260]
  EXPECT_EQ(g[0].kernel_ns, 170u);        // [100,250] + [300,320]
  EXPECT_EQ(g[0].memset_ns, 20u);
  EXPECT_EQ(g[0].communication_ns, 20u);
  EXPECT_EQ(g[0].exposed_comm_ns, 20u);
  EXPECT_EQ(g[0].memcpy_ns, 120u);
  EXPECT_EQ(g[0].exposed_memcpy_ns, 110u);
  EXPECT_EQ(g[0].busy_ns, 160u + 30u + 100u);
  EXPECT_EQ(g[0].idle_ns, g[0].total_ns - g[0].busy_ns);
  EXPECT_EQ(g[0].computation_ns + g[0].exposed_comm_ns + g[0].exposed_memcpy_ns + g[0].idle_ns, g[0].total_ns);
}

TEST(GpuTime, OneEntryPerDeviceAndNoneWithoutGpuWork) {
  Trace t;
  EXPECT_TRUE(gpu_time_breakdown(t).empty());
  kernel(t, 0, 10, "a", 0);
  kernel(t, 0, 30, "b", 1);
  const auto g = gpu_time_breakdown(t);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1].device, 1);
  EXPECT_EQ(g[1].busy_ns, 30u);
}

// A training loop's window: intervals are cut to it, the total is the
// window, and what the device did before and after it is told apart.
TEST(GpuTime, AWindowCutsEachIntervalToItAndTellsWhatCameBeforeAndAfter) {
  Trace t;
  kernel(t, 0, 50, "autotune", 0);          // start-up, outside
  kernel(t, 90, 130, "conv", 0);            // straddles the window's start
  kernel(t, 150, 170, "relu", 0);           // inside
  t.memcpys.push_back(copy(190, 230, CopyKind::DtoH, 64, true));  // straddles its end
  kernel(t, 400, 420, "shutdown", 0);       // after
  kernel(t, 10, 20, "other device", 1);     // a device idle in the window: no entry
  const auto g = gpu_time_breakdown(t, Interval{100, 200});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(g[0].windowed);
  EXPECT_EQ(g[0].device, 0);
  EXPECT_EQ(g[0].total_ns, 100u);
  EXPECT_EQ(g[0].busy_ns, 30u + 20u + 10u);
  EXPECT_EQ(g[0].idle_ns, 40u);
  EXPECT_EQ(g[0].kernels, 2u);
  EXPECT_EQ(g[0].memcpys, 1u);
  EXPECT_EQ(g[0].memcpy_ns, 10u);
  EXPECT_EQ(g[0].before_window_ns, 100u);
  EXPECT_EQ(g[0].after_window_ns, 220u);
  const auto whole = gpu_time_breakdown(t);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_FALSE(whole[0].windowed);
  EXPECT_EQ(whole[0].total_ns, 420u);
}

TEST(Intervals, SubtractLeavesTheUncoveredParts) {
  const auto from = merge_intervals({{0, 10}, {20, 30}});
  const auto rem = merge_intervals({{5, 22}, {25, 26}});
  const auto left = subtract_intervals(from, rem);
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(total_length(left), 5u + 3u + 4u);
}

TEST(Intervals, LengthWithinAWindowCountsOnlyWhatLiesInsideIt) {
  const auto busy = merge_intervals({{10, 20}, {30, 40}, {50, 60}});
  EXPECT_EQ(length_within(busy, {0, 5}), 0u) << "before every interval";
  EXPECT_EQ(length_within(busy, {70, 80}), 0u) << "after every interval";
  EXPECT_EQ(length_within(busy, {20, 30}), 0u) << "between two, touching both";
  EXPECT_EQ(length_within(busy, {15, 35}), 5u + 5u) << "straddling both ends";
  EXPECT_EQ(length_within(busy, {0, 100}), 30u) << "all of them";
  EXPECT_EQ(length_within(busy, {32, 38}), 6u) << "inside one";
  EXPECT_EQ(length_within(busy, {40, 40}), 0u) << "an empty window";
  EXPECT_EQ(length_within({}, {0, 100}), 0u);
}

// The breakdown agrees with TraceLens's GPU timeline (computed by TraceLens
// on the same trace, stored beside it) within 1%.
TEST(GpuTime, AgreesWithTraceLensOnTheH100VitTrace) {
  const std::string dir = GPUDIAG_SHARED_DATA_DIR "/traces/";
  std::ifstream csv(dir + "h100-vit-falconsai.tracelens-gpu_timeline.csv");
  if (!csv) GTEST_SKIP() << "the real traces are not at " << dir;
  std::map<std::string, double> expected_ms;
  std::string line;
  std::getline(csv, line);  // header
  while (std::getline(csv, line)) {
    std::stringstream ss(line);
    std::string type, ms;
    std::getline(ss, type, ',');
    std::getline(ss, ms, ',');
    expected_ms[type] = std::stod(ms);
  }
  ASSERT_EQ(expected_ms.count("total_time"), 1u);
  const Trace trace = load_trace(dir + "h100-vit-falconsai.trace.json.gz");
  const auto g = gpu_time_breakdown(trace);
  ASSERT_EQ(g.size(), 1u);
  auto near = [](double ours_ns, double theirs_ms) {
    const double ours_ms = ours_ns / 1e6;
    if (theirs_ms == 0) return std::abs(ours_ms) < 1e-6;
    return std::abs(ours_ms - theirs_ms) <= 0.01 * theirs_ms;
  };
  EXPECT_TRUE(near(static_cast<double>(g[0].total_ns), expected_ms["total_time"])) << g[0].total_ns;
  EXPECT_TRUE(near(static_cast<double>(g[0].busy_ns), expected_ms["busy_time"])) << g[0].busy_ns;
  EXPECT_TRUE(near(static_cast<double>(g[0].idle_ns), expected_ms["idle_time"])) << g[0].idle_ns;
  EXPECT_TRUE(near(static_cast<double>(g[0].computation_ns), expected_ms["computation_time"])) << g[0].computation_ns;
  EXPECT_TRUE(near(static_cast<double>(g[0].memcpy_ns), expected_ms["total_memcpy_time"])) << g[0].memcpy_ns;
  EXPECT_TRUE(near(static_cast<double>(g[0].exposed_memcpy_ns), expected_ms["exposed_memcpy_time"]));
  EXPECT_TRUE(near(static_cast<double>(g[0].communication_ns), expected_ms["total_comm_time"]));
}

}  // namespace
}  // namespace gpudiag
