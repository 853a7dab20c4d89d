// GD002 float64-leak: kernels that compute in Float64, known by their
// names, on a device and not on the host, and judged by their share of
// kernel time.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(Float64Leak, KernelsWithDoubleTemplateArgumentsAreReported) {
  EXPECT_TRUE(is_float64_kernel("void gemm_kernel<double, 128>(double const*, double*, int)"));
  EXPECT_TRUE(is_float64_kernel("void scale(double*, int)"));
  EXPECT_TRUE(is_float64_kernel("volta_dgemm_128x64_nn"));
  EXPECT_TRUE(is_float64_kernel("void add<c10::complex<double>>(int)"));
  EXPECT_FALSE(is_float64_kernel("void gemm_kernel<float, 128>(float const*, float*, int)"));
  EXPECT_FALSE(is_float64_kernel("void doubleBuffered<float>(float*)"));
  // PyTorch passes scalars as double to the function whose lambda the kernel runs: not FP64 math.
  EXPECT_FALSE(is_float64_kernel(
      "void at::native::elementwise<float, at::native::uniform_kernel(at::TensorIteratorBase&, double, double)"
      "::{lambda(float)#1}>(int, float)"));
  Trace t;
  kernel(t, 0, 1000, "void gemm_kernel<double, 128>(double const*, double*, int)");
  kernel(t, 1000, 3000, "void gemm_kernel<double, 128>(double const*, double*, int)");
  kernel(t, 3000, 4000, "void relu<float>(float*)");
  const auto f = only(detect(t), "GD002");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("2 launches"), std::string::npos);
  EXPECT_NE(f[0].message.find("75.0% of kernel time"), std::string::npos);
}

// gdrt names its float64 kernels so; the same kernels on gdrt's cpu device
// (the host) cost little: no GD002 there.
TEST(Float64Leak, GdrtFloat64KernelsOnADeviceAreReportedOnTheHostNot) {
  EXPECT_TRUE(is_float64_kernel("gdrt::binary<double>"));
  EXPECT_FALSE(is_float64_kernel("gdrt::binary"));
  Trace t;
  kernel(t, 0, 1000, "gdrt::binary<double>", kHostDevice);
  kernel(t, 1000, 2000, "gdrt::reduce<double>", kHostDevice);
  EXPECT_TRUE(only(detect(t), "GD002").empty());
  kernel(t, 2000, 3000, "gdrt::binary<double>", 1000);
  kernel(t, 3000, 4000, "gdrt::binary", 1000);
  const auto f = only(detect(t), "GD002");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("kernel 'gdrt::binary<double>' computes in Float64 (1 launches"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("50.0% of kernel time"), std::string::npos) << f[0].message;
}

// SeverityFollowsCost: below its rule's threshold (an option of `gpudiag report`)
// a finding is a note or nothing, and its message names the threshold.

// Float64 kernels at `fp64_ns` of 1 ms of kernel time.
Trace float64_kernels(std::uint64_t fp64_ns) {
  Trace t;
  kernel(t, 0, fp64_ns / 2, "void axpy<double>(double*, double const*, int)");
  kernel(t, fp64_ns / 2, fp64_ns, "void scale<double>(double*, int)");
  kernel(t, fp64_ns, 1'000'000, "void relu<float>(float*)");
  return t;
}

TEST(SeverityFollowsCost, Float64KernelsUnderTheShareAreOneNote) {
  const auto cheap = only(detect(float64_kernels(10'000)), "GD002");
  ASSERT_EQ(cheap.size(), 1u) << "one note for all of them";
  EXPECT_EQ(cheap[0].severity, Severity::Note);
  EXPECT_NE(cheap[0].message.find("2 kernels computed in Float64 for 10.0 us, 1.0% of kernel time, below the 5%"),
            std::string::npos)
      << cheap[0].message;
  EXPECT_NE(cheap[0].message.find("--float64-share"), std::string::npos);
  const auto costly = only(detect(float64_kernels(100'000)), "GD002");
  ASSERT_EQ(costly.size(), 2u) << "one warning per kernel";
  for (const Finding& f : costly) EXPECT_EQ(f.severity, Severity::Warning);
  DetectOptions strict;
  strict.float64_share = 0.005;
  EXPECT_EQ(only(detect(float64_kernels(10'000), strict), "GD002").front().severity, Severity::Warning);
}

}  // namespace
}  // namespace gpudiag
