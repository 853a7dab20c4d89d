// A launch's pointer-sized parameters, read from the parameter structs as
// CUPTI hands them to the callback (built here), and what each value points
// into, with the driver's answer faked and the host's mappings real.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "kernel_args.h"

namespace gpudiag::cupti {
namespace {

CUfunction fake_kernel() { return reinterpret_cast<CUfunction>(0x1234); }

TEST(KernelArgs, ADriverLaunchNamesItsKernelArgumentsAndStream) {
  void* args[2] = {};
  cuLaunchKernel_params p{};
  p.f = fake_kernel();
  p.kernelParams = args;
  p.hStream = reinterpret_cast<CUstream>(0x77);
  const Launch l = launch_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p);
  EXPECT_TRUE(l.is_launch());
  EXPECT_EQ(l.function, fake_kernel());
  EXPECT_EQ(l.args, args);
  EXPECT_EQ(l.stream, reinterpret_cast<CUstream>(0x77));
  EXPECT_FALSE(l.per_thread_stream);
  cuLaunchKernel_ptsz_params q{};
  q.f = fake_kernel();
  EXPECT_TRUE(launch_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &q).per_thread_stream);
}

TEST(KernelArgs, LaunchesWithAConfigTakeTheStreamFromIt) {
  CUlaunchConfig config{};
  config.hStream = reinterpret_cast<CUstream>(0x99);
  cuLaunchKernelEx_params p{&config, fake_kernel(), nullptr, nullptr};
  EXPECT_EQ(launch_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &p).stream,
            reinterpret_cast<CUstream>(0x99));
}

// Its kernel is named by the driver launch inside it, which records the arguments.
TEST(KernelArgs, ARuntimeLaunchIsNoLaunchOfItsOwn) {
  int stub = 0;
  void* args[1] = {};
  cudaLaunchKernel_v7000_params p{};
  p.func = &stub;
  p.args = args;
  EXPECT_FALSE(launch_of(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p).is_launch());
}

TEST(KernelArgs, OtherCallsAreNoLaunch) {
  cuLaunchKernel_params p{};
  EXPECT_FALSE(launch_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p).is_launch());
  EXPECT_FALSE(launch_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr).is_launch());
}

// A kernel (float* x, int n, const float* y, Array<char*, 2> data, int3 dims, OffsetCalc<12 words> calc):
// 0 and 2 are pointer-sized, 3 an aggregate of two words (as PyTorch's
// elementwise kernels take their operands), 4 is no multiple of 8 bytes
// and 5 too large to hold operands.
CUresult param_info(CUfunction, std::size_t index, std::size_t* offset, std::size_t* size) {
  constexpr std::size_t offsets[] = {0, 8, 16, 24, 40, 56}, sizes[] = {8, 4, 8, 16, 12, 96};
  if (index >= 6) return CUDA_ERROR_INVALID_VALUE;
  *offset = offsets[index];
  *size = sizes[index];
  return CUDA_SUCCESS;
}

TEST(KernelArgs, PointerSizedParametersAndSmallAggregatesAreRead) {
  const auto params = pointer_params(fake_kernel(), param_info);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].index, 0u);
  EXPECT_FALSE(params[0].aggregate);
  EXPECT_EQ(params[1].index, 2u);
  EXPECT_EQ(params[1].offset, 16u);
  EXPECT_EQ(params[1].words, 1u);
  EXPECT_EQ(params[2].index, 3u);
  EXPECT_EQ(params[2].offset, 24u);
  EXPECT_EQ(params[2].words, 2u);
  EXPECT_TRUE(params[2].aggregate);
  EXPECT_TRUE(pointer_params(fake_kernel(), nullptr).empty()) << "a driver without cuFuncGetParamInfo";
}

// The CUDA runtime launches CUkernels cast to CUfunction: cuFuncGetParamInfo
// refuses them, cuKernelGetParamInfo answers.
CUresult refuses(CUfunction, std::size_t, std::size_t*, std::size_t*) { return CUDA_ERROR_INVALID_HANDLE; }
CUresult kernel_param_info(CUkernel k, std::size_t index, std::size_t* offset, std::size_t* size) {
  return param_info(reinterpret_cast<CUfunction>(k), index, offset, size);
}

TEST(KernelArgs, AKernelLaunchedAsAFunctionIsAskedAsAKernel) {
  const auto params = pointer_params(fake_kernel(), refuses, kernel_param_info);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[2].index, 3u);
  EXPECT_EQ(params[2].words, 2u);
  EXPECT_EQ(pointer_params(fake_kernel(), param_info, kernel_param_info).size(), 3u) << "a function is asked as one";
  EXPECT_TRUE(pointer_params(fake_kernel(), refuses, nullptr).empty()) << "a driver without cuKernelGetParamInfo";
}

TEST(KernelArgs, ValuesComeFromTheArgumentArrayOrThePackedBuffer) {
  std::uint64_t x = 0x7f0000001000, y = 0x7f0000002000;
  int n = 5;
  std::uint64_t data[2] = {0x7f0000003000, 0x7f0000004000};
  void* args[4] = {&x, &n, &y, data};
  Launch l{.function = fake_kernel(), .args = args};
  const Param aggregate{3, 24, 2, true};
  std::uint64_t v = 0;
  ASSERT_TRUE(param_value(l, {2, 16}, 0, v));
  EXPECT_EQ(v, y);
  ASSERT_TRUE(param_value(l, aggregate, 1, v));
  EXPECT_EQ(v, data[1]);

  alignas(8) unsigned char buffer[56] = {};
  std::memcpy(buffer + 16, &y, 8);
  std::memcpy(buffer + 24, data, 16);
  std::size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  Launch packed{.function = fake_kernel(), .extra = extra};
  v = 0;
  ASSERT_TRUE(param_value(packed, {2, 16}, 0, v));
  EXPECT_EQ(v, y);
  ASSERT_TRUE(param_value(packed, aggregate, 0, v));
  EXPECT_EQ(v, data[0]);
  ASSERT_TRUE(param_value(packed, aggregate, 1, v));
  EXPECT_EQ(v, data[1]);
  EXPECT_FALSE(param_value(Launch{.function = fake_kernel()}, {0, 0}, 0, v)) << "neither arguments nor buffer";
}

DriverMemory driver_knows_nothing(std::uint64_t) { return DriverMemory::NotKnown; }
DriverMemory device_memory(std::uint64_t) { return DriverMemory::Device; }
DriverMemory pinned_memory(std::uint64_t) { return DriverMemory::Host; }
DriverMemory managed_memory(std::uint64_t) { return DriverMemory::Managed; }

TEST(KernelArgs, WhatTheDriverKnowsIsDevicePinnedOrManaged) {
  EXPECT_EQ(memory_of(0x7f0000001000, device_memory), MemKind::Device);
  EXPECT_EQ(memory_of(0x7f0000001000, pinned_memory), MemKind::Pinned);
  EXPECT_EQ(memory_of(0x7f0000001000, managed_memory), MemKind::Managed);
}

TEST(KernelArgs, MallocMemoryTheDriverDoesNotKnowIsPageable) {
  std::unique_ptr<float[]> host(new float[1 << 20]);
  EXPECT_EQ(memory_of(reinterpret_cast<std::uint64_t>(host.get()), driver_knows_nothing), MemKind::Pageable);
  int on_stack = 0;
  EXPECT_EQ(memory_of(reinterpret_cast<std::uint64_t>(&on_stack), driver_knows_nothing), MemKind::Pageable);
}

// A word of a struct is a pointer only where the driver knows the memory: a
// size or stride may look like a mapped host address.
TEST(KernelArgs, OnlyTheDriverMakesAStructsWordAPointer) {
  std::unique_ptr<float[]> host(new float[1 << 20]);
  const auto address = reinterpret_cast<std::uint64_t>(host.get());
  EXPECT_EQ(memory_of(address, driver_knows_nothing), MemKind::Pageable);
  EXPECT_EQ(driver_memory_of(address, driver_knows_nothing), MemKind::Unknown);
  EXPECT_EQ(driver_memory_of(address, device_memory), MemKind::Device);
  EXPECT_EQ(driver_memory_of(address, pinned_memory), MemKind::Pinned);
  EXPECT_EQ(driver_memory_of(4096, device_memory), MemKind::Unknown) << "a small number";
}

TEST(KernelArgs, NumbersAndUnmappedAddressesAreNoPointers) {
  EXPECT_EQ(memory_of(4096, device_memory), MemKind::Unknown) << "a small number";
  EXPECT_EQ(memory_of(0xffff800000000000, device_memory), MemKind::Unknown) << "not a user-space address";
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  munmap(page, 4096);
  EXPECT_EQ(memory_of(reinterpret_cast<std::uint64_t>(page), driver_knows_nothing), MemKind::Unknown);
}

}  // namespace
}  // namespace gpudiag::cupti
