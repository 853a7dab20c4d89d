// GD006 unchecked-cuda-error: API calls that returned an error, grouped;
// a failed launch named by its kernel; a kernel's error reported once, with
// the kernels launched before it.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(UncheckedCudaError, FailedCallsAreGroupedByNameAndStatus) {
  Trace t;
  for (int i = 0; i < 3; ++i)
    t.api_calls.push_back({.start_ns = 10u * i, .end_ns = 10u * i + 5, .name = t.intern("cudaMemcpy"), .status = 1});
  t.api_calls.push_back({.start_ns = 100, .end_ns = 105, .name = t.intern("cudaLaunchKernel"), .status = 0});
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("cudaMemcpy returned error 1 \"invalid argument\" (3 calls"), std::string::npos)
      << f[0].message;
}

TEST(UncheckedCudaError, AFailedLaunchIsNamedByItsKernelAndSaysItNeverRan) {
  Trace t;
  for (int i = 0; i < 2; ++i)
    t.api_calls.push_back({.start_ns = 10u * i, .end_ns = 10u * i + 1, .name = t.intern("cudaLaunchKernel"),
                           .status = 1, .stack = stack_named(t, "train_step"), .symbol = t.intern("_Z4fillPfif")});
  t.api_calls.push_back({.start_ns = 50, .end_ns = 51, .name = t.intern("cudaDeviceSynchronize"), .status = 0});
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u) << "one finding for the kernel's failed launches";
  EXPECT_NE(f[0].message.find("the launch of fill(float*, int, float) returned error 1 \"invalid argument\" "
                              "(2 launches): the kernel never ran"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("Only cudaGetLastError reports"), std::string::npos) << f[0].message;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].function, "train_step");
}

TEST(UncheckedCudaError, OutOfMemoryIsGD008AndNotReadyOrGetLastErrorAreNoErrors) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("cudaMalloc"), .status = 2});
  t.api_calls.push_back({.start_ns = 30, .end_ns = 31, .name = t.intern("cudaGetLastError"), .status = 2});
  t.api_calls.push_back({.start_ns = 40, .end_ns = 41, .name = t.intern("cudaStreamQuery"), .status = 600});
  const auto all = detect(t);
  EXPECT_TRUE(only(all, "GD006").empty()) << only(all, "GD006").front().message;
  const auto oom = only(all, "GD008");
  ASSERT_EQ(oom.size(), 1u) << "an allocation that returned out of memory, with no out-of-memory event recorded";
  EXPECT_NE(oom[0].message.find("out of memory on device 0: a request failed"), std::string::npos) << oom[0].message;
}

TEST(UncheckedCudaError, AKernelErrorIsReportedOnceWithTheKernelsLaunchedBeforeIt) {
  Trace t;
  auto call = [&](std::uint64_t at, const char* name, std::int32_t status, const char* kernel = nullptr) {
    t.api_calls.push_back({.start_ns = at, .end_ns = at + 1, .name = t.intern(name), .status = status,
                           .stack = stack_named(t, kernel ? "launch_site" : "call_site"),
                           .symbol = kernel ? t.intern(kernel) : 0});
  };
  call(10, "cudaLaunchKernel", 0, "finished_before_the_sync");
  call(20, "cudaDeviceSynchronize", 0);
  call(30, "cudaLaunchKernel", 0, "reads_a_host_pointer");
  call(40, "cudaLaunchKernel", 0, "scale");
  call(50, "cudaDeviceSynchronize", 700);
  call(60, "cudaMemcpy", 700);
  call(70, "cudaFree", 700);
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u) << "one finding for the error, not one per call that returned it";
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("cudaDeviceSynchronize returned error 700 \"an illegal memory access was encountered\""),
            std::string::npos) << m;
  EXPECT_NE(m.find("2 later calls returned it too"), std::string::npos) << m;
  EXPECT_NE(m.find("newest first: scale, reads_a_host_pointer"), std::string::npos) << m;
  EXPECT_EQ(m.find("finished_before_the_sync"), std::string::npos) << "it completed before a successful sync: " << m;
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "launch_site");
}

// gdrt names each launch call by its kernel, with no CUDA launch API name:
// it is a launch all the same, for every detector.
TEST(UncheckedCudaError, ALaunchNamedByItsKernelIsASuspectToo) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 11, .name = t.intern("conv2d_forward"), .domain = ApiDomain::Gdrt,
                         .symbol = t.intern("conv2d_forward")});
  t.api_calls.push_back({.start_ns = 20, .end_ns = 21, .name = t.intern("gdrt::copy"), .domain = ApiDomain::Gdrt});
  t.api_calls.push_back({.start_ns = 30, .end_ns = 31, .name = t.intern("cudaStreamSynchronize"), .status = 700});
  EXPECT_TRUE(t.is_launch(t.api_calls[0]));
  EXPECT_FALSE(t.is_launch(t.api_calls[1]));
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("newest first: conv2d_forward"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
