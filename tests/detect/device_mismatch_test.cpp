// GD001 device-mismatch: the host touching device memory, and a kernel
// given pageable host memory, tied to the kernel error that followed. Each
// bug has a correct twin.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(DeviceMismatch, HostReadOfDeviceMemoryIsReportedWithTheAllocatingStack) {
  Trace t;
  const StackId where = stack_named(t, "make_buffer", "unet.cpp", 12);
  alloc(t, 10, 0x7000, 256, 0, where);
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x7010, .bytes = 4, .stack = stack_named(t, "loss_item")});
  const auto f = only(detect(t), "GD001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Error);
  EXPECT_NE(f[0].message.find("device memory"), std::string::npos);
  ASSERT_EQ(f[0].stack.size(), 1u);
  EXPECT_EQ(f[0].stack[0].function, "loss_item");
  ASSERT_FALSE(f[0].notes.empty());
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "make_buffer");
}

TEST(DeviceMismatch, HostAccessOfHostOrPinnedMemoryIsFine) {
  Trace t;
  alloc(t, 10, 0x7000, 256, kHostDevice, kNoStack, MemKind::Pageable);
  alloc(t, 10, 0x9000, 256, 0, kNoStack, MemKind::Pinned);
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x7010, .bytes = 4});
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x9010, .bytes = 4});
  t.host_accesses.push_back({.time_ns = 5, .addr = 0x7010, .bytes = 4});  // before anything
  EXPECT_TRUE(only(detect(t), "GD001").empty());
}

// A kernel given pageable host memory ---------------------------------------

constexpr std::uint64_t kHostArray = 0x55d0c0a01000;

// host_ptr_kernel: scale(float*, int) given a malloc'd array; the launch
// returns 0, cudaDeviceSynchronize returns 700; the kernel's record never came.
Trace host_pointer_kernel() {
  Trace t;
  launch(t, 121, 100, "_Z5scalePfi", 7, {{kHostArray, MemKind::Pageable}, {1 << 20, MemKind::Unknown}});
  call(t, 110, "cudaGetLastError");
  call(t, 120, "cudaDeviceSynchronize", 700);
  call(t, 130, "cudaMemcpy", 700);
  return t;
}

TEST(KernelArguments, PageableHostMemoryGivenToAKernelIsGD001TiedToThe700ThatFollowed) {
  const auto all = detect(host_pointer_kernel());
  const auto f = only(all, "GD001");
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_EQ(f[0].severity, Severity::Error);
  EXPECT_NE(m.find("kernel scale(float*, int) was given pageable host memory as parameter 0 (0x55d0c0a01000)"),
            std::string::npos) << m;
  EXPECT_NE(m.find("neither allocated with cudaMallocHost nor registered with cudaHostRegister"), std::string::npos) << m;
  EXPECT_NE(m.find("error 700 \"an illegal memory access was encountered\" at cudaDeviceSynchronize followed, 20 ns "
                   "after the launch: this launch is its likely cause"),
            std::string::npos) << m;
  EXPECT_NE(m.find("cudaMallocHost or cudaMallocManaged"), std::string::npos) << m;
  EXPECT_EQ(m.find("parameter 1"), std::string::npos) << "a number is no pointer: " << m;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].function, "launch_site");
  ASSERT_EQ(f[0].notes.size(), 1u);
  EXPECT_EQ(f[0].notes[0].message, "error 700 was reported here");
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "cudaDeviceSynchronize");
  // GD006's finding for the same error is also true, and points at the cause.
  const auto e = only(all, "GD006");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].message.find("newest first: scale(float*, int); scale(float*, int) was given pageable host memory "
                              "as parameter 0 (0x55d0c0a01000), which the GPU cannot read: the likely cause (GD001)"),
            std::string::npos) << e[0].message;
}

// What looks like malloc'd memory may be a number that happens to fall in
// the executable's image: without the kernel error it would cause, no finding.
// A program that checks every launch with cudaGetLastError may learn of the
// fault there, and exit at once: no later call reports the error.
TEST(KernelArguments, AFaultFirstReportedByCudaGetLastErrorIsGD001) {
  Trace t;
  launch(t, 121, 100, "_Z16forward_backwardPKfS0_PKfPfS3_i", 7,
         {{kSrc, MemKind::Device}, {kHostArray, MemKind::Pageable}, {kOut, MemKind::Device}});
  call(t, 110, "cudaGetLastError");
  launch(t, 122, 120, "_Z3sgdPfS_f", 7, {{kOut, MemKind::Device}});
  call(t, 130, "cudaGetLastError", 700);
  const auto f = only(detect(t), "GD001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("was given pageable host memory as parameter 1 (0x55d0c0a01000)"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("error 700 \"an illegal memory access was encountered\" at cudaGetLastError followed, "
                              "30 ns after the launch"),
            std::string::npos)
      << f[0].message;
}

TEST(KernelArguments, APageableLookingArgumentWithNoKernelErrorAfterItIsNoGD001) {
  Trace t;
  const StackId site = stack_named(t, "step", "train.cu", 12);
  for (std::uint64_t i = 0; i < 3; ++i)
    launch(t, 10 + i, 100 + 100 * i, "scale(float*, int)", 7, {{kHostArray, MemKind::Pageable}}, 0, site);
  // An error after a successful synchronisation is not this launch's.
  call(t, 500, "cudaDeviceSynchronize");
  launch(t, 20, 600, "other(float*)", 7, {{kSrc, MemKind::Device}});
  call(t, 700, "cudaDeviceSynchronize", 700);
  EXPECT_TRUE(only(detect(t), "GD001").empty()) << only(detect(t), "GD001").front().message;
}

TEST(KernelArguments, LaunchesFromOnePlaceGivenPageableMemoryAreOneFinding) {
  Trace t;
  const StackId site = stack_named(t, "step", "train.cu", 12);
  for (std::uint64_t i = 0; i < 3; ++i)
    launch(t, 10 + i, 100 + 100 * i, "scale(float*, int)", 7, {{kHostArray, MemKind::Pageable}}, 0, site);
  call(t, 500, "cudaDeviceSynchronize", 700);
  const auto f = only(detect(t), "GD001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("parameter 0 (0x55d0c0a01000, in 3 launches)"), std::string::npos) << f[0].message;
}

TEST(KernelArguments, AHostAllocationTheTraceRecordedIsNamedWithItsStack) {
  Trace t;
  alloc(t, 10, kHostArray, 4096, kHostDevice, stack_named(t, "load_batch", "data.cpp", 7), MemKind::Pageable);
  launch(t, 1, 100, "scale(float*, int)", 7, {{kHostArray + 64, MemKind::Pageable}});
  call(t, 200, "cudaDeviceSynchronize", 700);
  const auto f = only(detect(t), "GD001");
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].message, "the host memory was allocated here");
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "load_batch");
}

TEST(KernelArguments, DevicePinnedManagedAndUnknownArgumentsAreNoGD001) {
  Trace t;
  alloc(t, 10, kSrc, kMiB4, 0);
  alloc(t, 10, 0x7f0000000000, 4096, kHostDevice, kNoStack, MemKind::Pinned);
  launch(t, 1, 100, "scale(float*, int)", 7,
         {{kSrc, MemKind::Device},
          {0x7f0000000010, MemKind::Pinned},
          {0x7e0000000000, MemKind::Managed},
          {kHostArray, MemKind::Unknown},  // a number that looks like an address
          {0x7f0000000020, MemKind::Pageable}});  // the trace says cudaMallocHost made it
  call(t, 120, "cudaDeviceSynchronize", 700);
  EXPECT_TRUE(only(detect(t), "GD001").empty());
}

}  // namespace
}  // namespace gpudiag
