// The detectors on real traces recorded on real GPUs.
#include <filesystem>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/report/report.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

std::string trace_path(const char* name) {
  return std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/" + name;
}

TEST(RealTraces, PageableCopiesOfV100ResNet50AreGD009) {
  const std::string path = trace_path("v100-resnet50.trace.json.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  const Report r = analyze(t);
  const auto f = only(r.findings, "GD009");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("12 asynchronous HtoD copies"), std::string::npos) << f[0].message;
  // Unknown addresses (this Kineto version records none) never make use-after-free reports.
  EXPECT_TRUE(only(r.findings, "GD004").empty());
  // Memory: both devices tracked, the device peak above 1 GiB (ResNet-50 training activations).
  ASSERT_NE(r.memory.device(0), nullptr);
  EXPECT_GT(r.memory.device(0)->peak_bytes, 1ull << 30);
}

TEST(RealTraces, H100VitIsLaunchBoundAndHasNoFloat64) {
  const std::string path = trace_path("h100-vit-falconsai.trace.json.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  EXPECT_EQ(only(r.findings, "GD011").size(), 1u);
  EXPECT_TRUE(only(r.findings, "GD002").empty());
  ASSERT_NE(r.memory.device(0), nullptr);
  EXPECT_GT(r.memory.device(0)->peak_reserved, 0u);  // Kineto's Total Reserved
}

TEST(RealTraces, EveryRealTraceAnalysesWithoutError) {
  const std::string dir = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().find(".trace.json") == std::string::npos) continue;
    const Trace t = load_trace(e.path().string());
    const Report r = analyze(t);
    EXPECT_FALSE(r.gpu_time.empty()) << e.path();
    ++n;
  }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace gpudiag
