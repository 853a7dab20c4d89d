// GD011 launch-bound: a GPU that waits for its host, with tiny kernels,
// long idle gaps, kernels shorter than their launch.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(LaunchBound, TinyKernelsLongGapsAndCopiesDominating) {
  Trace t;
  for (int i = 0; i < 40; ++i) {
    kernel(t, 100'000u * i, 100'000u * i + 5'000, "tiny", 0, 7, i + 1);
    t.api_calls.push_back({.start_ns = 100'000u * i, .end_ns = 100'000u * i + 8'000,
                           .name = t.intern("cudaLaunchKernel"), .correlation = static_cast<std::uint64_t>(i + 1)});
  }
  kernel(t, 2'000'000'000, 2'000'001'000, "after_a_gap");
  const auto f = only(detect(t), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("1 idle gap longer than 500.0 ms"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("ran shorter than 50.0 us"), std::string::npos);
  EXPECT_NE(f[0].message.find("less GPU time than the CPU spent launching them"), std::string::npos);
  EXPECT_NE(f[0].message.find("The GPU is launch-bound"), std::string::npos);
  EXPECT_EQ(f[0].message.find("faster on the CPU"), std::string::npos) << "no claim the trace has no evidence for";
}

TEST(LaunchBound, KernelsACpuDeviceRanAreNotAGpuWaiting) {
  Trace t;
  for (int i = 0; i < 40; ++i) kernel(t, 100'000u * i, 100'000u * i + 5'000, "cpu_conv", kHostDevice);
  kernel(t, 2'000'000'000, 2'000'001'000, "after_a_gap", kHostDevice);
  EXPECT_TRUE(only(detect(t), "GD011").empty()) << "the host is no GPU: " << only(detect(t), "GD011").front().message;
}

TEST(LaunchBound, ShortKernelsBesideLongOnesOnABusyGpuAreNoWaiting) {
  // A small model on a GPU that keeps up: each layer a 400 us convolution
  // and three 3 us element-wise kernels, 2 us apart. Three kernels in four
  // are short, but they are 2% of the kernel time and the GPU is busy 97%.
  Trace t;
  std::uint64_t at = 0, id = 0;
  for (int layer = 0; layer < 50; ++layer)
    for (std::uint64_t d : {400'000u, 3'000u, 3'000u, 3'000u}) {
      kernel(t, at, at + d, d > 50'000 ? "conv" : "bias_relu", 0, 7, ++id);
      t.api_calls.push_back({.start_ns = at, .end_ns = at + 5'000, .name = t.intern("cudaLaunchKernel"), .correlation = id});
      at += d + 2'000;
    }
  const auto f = only(detect(t), "GD011");
  EXPECT_TRUE(f.empty()) << f.front().message;
}

TEST(LaunchBound, ABusyGpuRunningOnlyShortKernelsIsLaunchBound) {
  // One image per step: every kernel 10 us, 8 us apart (busy 56%); the
  // GPU's whole time goes to kernels too small to be worth their launch.
  Trace t;
  for (int i = 0; i < 200; ++i) kernel(t, 18'000u * i, 18'000u * i + 10'000, "tiny_conv");
  const auto f = only(detect(t), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("100% of 200 kernels ran shorter than 50.0 us (100% of the kernel time)"), std::string::npos)
      << f[0].message;
}

TEST(LaunchBound, BusyGpuWithLongKernelsIsFine) {
  Trace t;
  for (int i = 0; i < 40; ++i) kernel(t, 1'000'000u * i, 1'000'000u * i + 990'000, "big_gemm");
  EXPECT_TRUE(only(detect(t), "GD011").empty());
}

// SeverityFollowsCost: below its rule's threshold (an option of `gpudiag report`)
// a finding is a note or nothing, and its message names the threshold.

// A GPU idle while the host sits in a sync waits with it (for another
// rank's collective, say): that is no launch-bound idleness.
TEST(SeverityFollowsCost, IdlenessWhileTheHostWaitsInASyncIsNotLaunchBound) {
  Trace t;
  std::uint64_t id = 0;
  for (std::uint64_t step = 0; step < 50; ++step) {
    const std::uint64_t at = step * 1'000'000;
    for (std::uint64_t k = 0; k < 10; ++k) {
      kernel(t, at + 10'000 * k, at + 10'000 * k + 8'000, "tiny", 0, 7, ++id);
      t.api_calls.push_back({.start_ns = at + 10'000 * k - 5'000, .end_ns = at + 10'000 * k - 1'000,
                             .name = t.intern("cudaLaunchKernel"), .correlation = id});
    }
    t.api_calls.push_back({.start_ns = at + 100'000, .end_ns = at + 990'000, .name = t.intern("cudaStreamSynchronize")});
  }
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD011").empty()) << only(detect(t), "GD011").front().message;
  Trace launching = t;
  std::erase_if(launching.api_calls, [&](const ApiCall& a) { return launching.str(a.name) == "cudaStreamSynchronize"; });
  const auto f = only(detect(launching), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("--idle-share"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
