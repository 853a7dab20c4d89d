// Allocation and free calls read from their parameter structs (built here, as
// CUPTI hands them to the callback at the call's exit), for every family the
// injection library records: malloc/free, stream-ordered and pool, pinned
// host allocation and registration, managed, and the virtual-memory API.
#include <gtest/gtest.h>

#include "gpudiag/api_kinds.h"
#include "memory_calls.h"

namespace gpudiag::cupti {
namespace {

using Op = MemoryEffect::Op;

MemoryEffect runtime(CUpti_CallbackId id, const void* params, bool ok = true) {
  return memory_effect(CUPTI_CB_DOMAIN_RUNTIME_API, id, params, ok);
}
MemoryEffect driver(CUpti_CallbackId id, const void* params, bool ok = true) {
  return memory_effect(CUPTI_CB_DOMAIN_DRIVER_API, id, params, ok);
}

TEST(MemoryCalls, CudaMallocGivesTheAddressItWroteAndTheSize) {
  void* out = reinterpret_cast<void*>(0x7f0000200000);
  cudaMalloc_v3020_params p{&out, 1 << 20};
  const MemoryEffect e = runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p);
  EXPECT_EQ(e.op, Op::Alloc);
  EXPECT_EQ(e.addr, 0x7f0000200000u);
  EXPECT_EQ(e.bytes, 1u << 20);
  EXPECT_EQ(e.kind, MemKind::Device);
  EXPECT_FALSE(e.stream_ordered);
}

TEST(MemoryCalls, AFailedAllocationKeepsTheRequestAndNeverReadsItsOutputPointer) {
  cudaMalloc_v3020_params p{nullptr, 1ull << 40};  // cudaMalloc(nullptr, 1 TiB): reading *devPtr would crash
  const MemoryEffect e = runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, false);
  EXPECT_EQ(e.op, Op::Alloc);
  EXPECT_EQ(e.addr, 0u);
  EXPECT_EQ(e.bytes, 1ull << 40) << "what an out-of-memory finding reports as the request";
  CUmemGenericAllocationHandle handle = 0;
  cuMemCreate_params create{&handle, 2u << 20, nullptr, 0};
  EXPECT_EQ(driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &create, false).bytes, 2u << 20);
  EXPECT_EQ(driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &create, true).op, Op::None)
      << "physical memory is recorded when it is mapped";
}

TEST(MemoryCalls, StreamOrderedCallsCarryTheirStream) {
  void* out = reinterpret_cast<void*>(0x1000);
  auto* stream = reinterpret_cast<cudaStream_t>(0x5151);
  cudaMallocAsync_v11020_params a{&out, 256, stream};
  MemoryEffect e = runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, &a);
  EXPECT_TRUE(e.stream_ordered);
  EXPECT_EQ(e.stream, stream);
  EXPECT_FALSE(e.per_thread_stream);
  cudaFreeAsync_ptsz_v11020_params f{out, stream};
  e = runtime(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, &f);
  EXPECT_EQ(e.op, Op::Free);
  EXPECT_EQ(e.addr, 0x1000u);
  EXPECT_TRUE(e.per_thread_stream);
  CUdeviceptr dptr = 0x2000;
  cuMemAllocFromPoolAsync_params pool{&dptr, 512, nullptr, reinterpret_cast<CUstream>(0x77)};
  e = driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, &pool);
  EXPECT_EQ(e.addr, 0x2000u);
  EXPECT_EQ(e.stream, reinterpret_cast<void*>(0x77));
}

TEST(MemoryCalls, PinnedRegisteredAndManagedMemoryKeepTheirKind) {
  void* host = reinterpret_cast<void*>(0x3000);
  cudaHostAlloc_v3020_params h{&host, 64, 0};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &h).kind, MemKind::Pinned);
  cudaHostRegister_v4000_params r{host, 4096, 0};
  const MemoryEffect reg = runtime(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, &r);
  EXPECT_EQ(reg.op, Op::Alloc);
  EXPECT_EQ(reg.addr, 0x3000u);
  EXPECT_EQ(reg.kind, MemKind::Pinned);
  cudaHostUnregister_v4000_params u{host};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, &u).op, Op::Free);
  void* managed = reinterpret_cast<void*>(0x4000);
  cudaMallocManaged_v6000_params m{&managed, 128, 1};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, &m).kind, MemKind::Managed);
  CUdeviceptr d = 0x5000;
  cuMemAllocManaged_params dm{&d, 32, 1};
  EXPECT_EQ(driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &dm).kind, MemKind::Managed);
}

TEST(MemoryCalls, PitchedAllocationsCountThePitchTheDriverChose) {
  void* out = reinterpret_cast<void*>(0x6000);
  std::size_t pitch = 512;
  cudaMallocPitch_v3020_params p{&out, &pitch, 500, 10};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, &p).bytes, 5120u);
}

TEST(MemoryCalls, VirtualMemoryMappingsAreAllocations) {
  cuMemMap_params map{0x7000000, 2u << 20, 0, 1, 0};
  MemoryEffect e = driver(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &map);
  EXPECT_EQ(e.op, Op::Alloc);
  EXPECT_EQ(e.addr, 0x7000000u);
  EXPECT_EQ(e.bytes, 2u << 20);
  cuMemUnmap_params unmap{0x7000000, 2u << 20};
  e = driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  EXPECT_EQ(e.op, Op::Free);
  EXPECT_EQ(e.bytes, 2u << 20);
}

TEST(MemoryCalls, FreeingNullAFailedFreeAndOtherCallsChangeNothing) {
  cudaFree_v3020_params null_free{nullptr};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &null_free).op, Op::None);
  cudaFree_v3020_params f{reinterpret_cast<void*>(0x8000)};
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &f).op, Op::Free);
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &f, false).op, Op::None);
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &f).op, Op::None);
  EXPECT_EQ(runtime(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, nullptr).op, Op::None);
}

TEST(ApiKinds, NamesOfBothApisAndTheirVersionSuffixes) {
  EXPECT_EQ(api_kind("cudaMalloc"), ApiKind::Memory);
  EXPECT_EQ(api_kind("cudaMalloc_v3020"), ApiKind::Memory);  // cuptiGetCallbackName's spelling
  EXPECT_EQ(api_kind("cuMemMap"), ApiKind::Memory);
  EXPECT_EQ(api_kind("cuMemMapArrayAsync"), ApiKind::Other);
  EXPECT_EQ(api_kind("cudaMemcpyAsync_ptsz"), ApiKind::Copy);
  EXPECT_EQ(api_kind("cuMemsetD32Async"), ApiKind::Memset);
  EXPECT_EQ(api_kind("cudaLaunchKernel"), ApiKind::Launch);
  EXPECT_EQ(api_kind("cuGraphLaunch"), ApiKind::Launch);
  EXPECT_EQ(api_kind("cudaStreamSynchronize"), ApiKind::Sync);
  EXPECT_EQ(api_kind("cuEventQuery"), ApiKind::Sync);
  EXPECT_EQ(api_kind("cudaGetDevice"), ApiKind::Other);
  EXPECT_TRUE(is_allocation_call("cuMemCreate"));
  EXPECT_TRUE(is_allocation_call("cudaHostAlloc"));
  EXPECT_FALSE(is_allocation_call("cudaFree"));
  EXPECT_FALSE(is_allocation_call("cuMemMap"));
}

}  // namespace
}  // namespace gpudiag::cupti
