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

// gpudiag's own traces of small CUDA programs on an H100 (shared/data/gpu/README.md).
std::string gpu_trace(const char* name) { return std::string(GPUDIAG_SHARED_DATA_DIR) + "/gpu/" + name; }

TEST(RealGpuTraces, AGzippedGdtraceLoadsAsItself) {
  const std::string path = gpu_trace("h100-cuda-leak.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  EXPECT_EQ(t.source, TraceSource::Gdtrace);
  EXPECT_EQ(t.allocs.size(), 5u);
}

TEST(RealGpuTraces, AnAllocationOutOfMemoryIsGD008NotAnUncheckedError) {
  const std::string path = gpu_trace("h100-cuda-oom.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  const auto oom = only(r.findings, "GD008");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_NE(oom[0].message.find("out of memory on device 0"), std::string::npos) << oom[0].message;
  // The program read cudaGetLastError after the failure: that is checking, not ignoring.
  EXPECT_TRUE(only(r.findings, "GD006").empty()) << only(r.findings, "GD006").front().message;
}

TEST(RealGpuTraces, AnIllegalAddressNamesTheFirstCallThatReportedItAndTheKernelLaunchedBefore) {
  const std::string path = gpu_trace("h100-cuda-host_ptr_kernel.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  const auto f = only(r.findings, "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("cudaDeviceSynchronize"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("error 700 \"an illegal memory access was encountered\": a kernel launched earlier"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("newest first: scale("), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
