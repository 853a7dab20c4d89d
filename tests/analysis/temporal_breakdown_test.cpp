#include "gpudiag/analysis/temporal_breakdown.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpudiag/import/load_trace.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(HtaKernelType, FollowsHtasNamePatterns) {
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*)"), HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("void ncclKernel_Broadcast(int)"), HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("hcclAllGather"), HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("Memcpy DtoD (Device -> Device)"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("dma_copy"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("volta_sgemm_128x64_nn"), HtaKernelType::Computation);
  EXPECT_EQ(hta_kernel_type("void at::native::vectorized_elementwise_kernel<4>(int)"), HtaKernelType::Computation);
  // A name that merely mentions them is no communication or memory of HTA's...
  EXPECT_EQ(hta_kernel_type("my_nccl_helper"), HtaKernelType::Computation);
  // ...and what HTA takes for runtime work is no computation either.
  EXPECT_EQ(hta_kernel_type("copy_via_Memcpy_kernel"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("Stream Wait Event"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("cudaStreamSynchronize"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("cudaLaunchKernel"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("LaunchKernel_cuda"), HtaKernelType::Computation);
}

TEST(TemporalBreakdown, OverlapAcrossStreamsCountsOnce) {
  Trace t;
  kernel(t, 100, 200, "gemm", 0, 7);
  kernel(t, 150, 250, "relu", 0, 20);                       // overlaps gemm
  kernel(t, 240, 300, "ncclKernel_AllReduce", 0, 21);       // 10 ns under relu
  t.memcpys.push_back(copy(350, 400, CopyKind::DtoH, 64, true));
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].window, (Interval{100, 400}));
  EXPECT_EQ(b[0].compute_ns, 150u);         // [100,250]
  EXPECT_EQ(b[0].communication_ns, 60u);
  EXPECT_EQ(b[0].exposed_comm_ns, 50u);     // [250,300]
  EXPECT_EQ(b[0].memory_ns, 50u);
  EXPECT_EQ(b[0].non_compute_ns, 100u);     // [250,300] + [350,400]
  EXPECT_EQ(b[0].idle_ns, 50u);             // [300,350]
  EXPECT_EQ(b[0].idle_ns + b[0].compute_ns + b[0].non_compute_ns, b[0].window.length());
  EXPECT_EQ(b[0].events, 4u);
  EXPECT_DOUBLE_EQ(b[0].share(b[0].compute_ns), 0.5);
}

TEST(TemporalBreakdown, CommunicationHiddenBehindComputeIsNotExposed) {
  Trace t;
  kernel(t, 0, 1000, "gemm", 0, 7);
  kernel(t, 100, 400, "ncclKernel_AllReduce", 0, 21);
  kernel(t, 500, 1000, "ncclKernel_AllGather", 0, 21);
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].communication_ns, 800u);
  EXPECT_EQ(b[0].exposed_comm_ns, 0u);
  EXPECT_EQ(b[0].non_compute_ns, 0u);
  EXPECT_EQ(b[0].idle_ns, 0u);
}

TEST(TemporalBreakdown, OtherWorkIsBusyButNoCompute) {
  Trace t;
  kernel(t, 0, 100, "gemm", 0, 7);
  kernel(t, 100, 150, "Stream Wait Event", 0, 7);
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].compute_ns, 100u);
  EXPECT_EQ(b[0].non_compute_ns, 50u);
  EXPECT_EQ(b[0].communication_ns + b[0].memory_ns, 0u);
}

TEST(TemporalBreakdown, EmptyTraceHasNoEntryAndAnEmptyWindowNoNaN) {
  Trace t;
  EXPECT_TRUE(temporal_breakdown(t).empty());
  kernel(t, 500, 500, "gemm", 0, 7);  // a kernel too short to be timed
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].window.length(), 0u);
  EXPECT_EQ(b[0].idle_ns + b[0].compute_ns + b[0].non_compute_ns, 0u);
  EXPECT_EQ(b[0].share(b[0].idle_ns), 0.0);
  EXPECT_FALSE(std::isnan(b[0].share(b[0].compute_ns)));
}

TEST(TemporalBreakdown, OneEntryPerDevice) {
  Trace t;
  kernel(t, 0, 10, "a", 1);
  kernel(t, 0, 30, "ncclKernel_AllReduce", 0);
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].device, 0);
  EXPECT_EQ(b[0].communication_ns, 30u);
  EXPECT_EQ(b[1].device, 1);
  EXPECT_EQ(b[1].compute_ns, 10u);
}

// Two profiler steps: HTA counts what the host launched before the last one
// began, wherever it ran; the last step's own work only when asked to.
Trace two_steps() {
  Trace t;
  t.ranges.push_back({.start_ns = 0, .end_ns = 1000, .name = t.intern("ProfilerStep#5")});
  t.ranges.push_back({.start_ns = 1000, .end_ns = 2000, .name = t.intern("ProfilerStep#6")});
  launch(t, 1, 100, "gemm", 7, {}, 1200);   // launched in step 5, runs into step 6
  launch(t, 2, 1100, "relu", 7, {}, 1500);  // step 6's
  kernel(t, 600, 700, "no_launch_seen", 0, 7, 0);
  kernel(t, 1700, 1800, "late_no_launch", 0, 7, 0);
  kernel(t, 50, 60, "launch_not_in_trace", 0, 7, 99);
  return t;
}

TEST(TemporalBreakdown, LeavesOutTheWorkOfTheLastProfilerStepAsHtaDoes) {
  const Trace t = two_steps();
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].events, 2u);                   // gemm and no_launch_seen
  EXPECT_EQ(b[0].window, (Interval{105, 1200}));
  EXPECT_EQ(b[0].compute_ns, 1095u);
  const auto all = temporal_breakdown(t, {.include_last_profiler_step = true});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].events, 4u);                 // and relu, late_no_launch
  EXPECT_EQ(all[0].window, (Interval{105, 1800}));
}

TEST(TemporalBreakdown, OneProfilerStepKeepsEverything) {
  Trace t = two_steps();
  t.ranges.pop_back();
  const auto b = temporal_breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].events, 5u);
  EXPECT_EQ(b[0].window, (Interval{50, 1800}));
}

// HTA's own numbers for its multi-rank training traces: the CSV that
// tests/import/hta_reference.py wrote with HTA (README.md beside it).
struct HtaRow {
  std::map<std::string, std::string> fields;
  double number(const std::string& k) const { return std::stod(fields.at(k)); }
};

std::vector<HtaRow> read_hta_reference(const std::string& path) {
  std::ifstream in(path);
  std::vector<HtaRow> rows;
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (header.empty()) {
      header = cells;
      continue;
    }
    HtaRow row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row.fields[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

const std::string kHtaSet = "hta/trace_filter";

// The traces are HTA's; the project keeps them with the other real traces,
// beside the checkout, or in the tree beside the reference.
std::string hta_trace(const std::string& file) {
  for (const std::string& dir : {std::string(GPUDIAG_SOURCE_DIR) + "/tests/import/data/" + kHtaSet,
                                 std::string(GPUDIAG_SHARED_DATA_DIR) + "/" + kHtaSet}) {
    if (std::filesystem::exists(dir + "/" + file)) return dir + "/" + file;
  }
  return "";
}

TEST(TemporalBreakdown, AgreesWithHtaOnItsMultiRankTrainingTraces) {
  const std::string reference = std::string(GPUDIAG_SOURCE_DIR) + "/tests/import/data/" + kHtaSet + "/hta-reference.csv";
  const std::vector<HtaRow> rows = read_hta_reference(reference);
  ASSERT_EQ(rows.size(), 2u) << reference;
  const std::string first = hta_trace(rows[0].fields.at("file"));
  if (first.empty()) GTEST_SKIP() << "no " << rows[0].fields.at("file") << " in " << GPUDIAG_SHARED_DATA_DIR << "/" << kHtaSet;
  for (const HtaRow& hta : rows) {
    const std::string path = hta_trace(hta.fields.at("file"));
    ASSERT_FALSE(path.empty()) << hta.fields.at("file");
    SCOPED_TRACE(path);
    const Trace t = load_trace(path);
    EXPECT_EQ(t.job.rank, static_cast<int>(hta.number("rank")));
    const auto b = temporal_breakdown(t);
    ASSERT_EQ(b.size(), 1u);
    const double window_us = static_cast<double>(b[0].window.length()) / 1000.0;
    auto pct = [&](std::uint64_t ns) { return 100.0 * b[0].share(ns); };
    auto hta_pct = [&](const char* us) { return 100.0 * hta.number(us) / hta.number("kernel_time_us"); };
    // The same window, to HTA's whole microseconds.
    EXPECT_NEAR(window_us, hta.number("kernel_time_us"), 1.0);
    EXPECT_NEAR(pct(b[0].idle_ns), hta.number("idle_time_pctg"), 1.0);
    EXPECT_NEAR(pct(b[0].compute_ns), hta.number("compute_time_pctg"), 1.0);
    EXPECT_NEAR(pct(b[0].non_compute_ns), hta.number("non_compute_time_pctg"), 1.0);
    EXPECT_NEAR(pct(b[0].communication_ns), hta_pct("comm_us"), 1.0);
    EXPECT_NEAR(pct(b[0].memory_ns), hta_pct("memory_us"), 1.0);
    EXPECT_NEAR(pct(b[0].exposed_comm_ns), hta_pct("exposed_comm_us"), 1.0);
    EXPECT_GT(b[0].communication_ns, 0u);  // a data-parallel job: it all-reduces
  }
}

}  // namespace
}  // namespace gpudiag
