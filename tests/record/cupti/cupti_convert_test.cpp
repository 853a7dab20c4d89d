// CUPTI record -> event conversion, with CUDA 13 record structs built here.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cupti_convert.h"

namespace gpudiag::cupti {
namespace {

struct FakeHooks {
  std::map<std::string, rec::StringId> ids;
  std::map<rec::StringId, std::string> names;
  Hooks hooks() {
    return Hooks{
        .intern =
            [this](std::string_view s) {
              auto [it, added] = ids.emplace(std::string(s), static_cast<rec::StringId>(ids.size() + 1));
              names[it->second] = it->first;
              return it->second;
            },
        .stack_of = [](std::uint32_t corr) -> rec::StackId { return corr == 77 ? 5 : 0; },
        .is_query = [](std::uint32_t corr) { return corr == 88; },
    };
  }
};

template <class T>
T& as(Event& e) {
  EXPECT_TRUE(std::holds_alternative<T>(e));
  return std::get<T>(e);
}

TEST(CuptiConvert, KernelRecord) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 5000;
  k.deviceId = 1;
  k.streamId = 13;
  k.gridX = 64, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.correlationId = 77;
  k.name = "_Z6matmulPfS_S_i";
  FakeHooks f;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&k), f.hooks());
  auto& ke = as<rec::KernelEvent>(e);
  EXPECT_EQ(f.names[ke.name], "matmul(float*, float*, float*, int)") << "demangled";
  EXPECT_EQ(ke.start_ns, 1000u);
  EXPECT_EQ(ke.end_ns, 5000u);
  EXPECT_EQ(ke.device, 1);
  EXPECT_EQ(ke.stream, 13u);
  EXPECT_EQ(ke.grid[0], 64u);
  EXPECT_EQ(ke.grid[1], 2u);
  EXPECT_EQ(ke.block[0], 256u);
  EXPECT_EQ(ke.shared_bytes, 3072u);
  EXPECT_EQ(ke.correlation, 77u);
  EXPECT_EQ(ke.stack, 5u) << "the host stack captured at the launch";
}

TEST(CuptiConvert, MemcpyRecordUsesCuptiMemoryKinds) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 4096;
  m.start = 10, m.end = 20;
  m.streamId = 7;
  FakeHooks f;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&m), f.hooks());
  auto& me = as<rec::MemcpyEvent>(e);
  EXPECT_EQ(me.copy, CopyKind::HtoD);
  EXPECT_EQ(me.src_kind, MemKind::Pageable);
  EXPECT_EQ(me.dst_kind, MemKind::Device);
  EXPECT_TRUE(me.async);
  EXPECT_EQ(me.bytes, 4096u);
  m.flags = 0;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  Event e2 = convert(reinterpret_cast<CUpti_Activity*>(&m), f.hooks());
  EXPECT_FALSE(as<rec::MemcpyEvent>(e2).async);
  EXPECT_EQ(as<rec::MemcpyEvent>(e2).copy, CopyKind::PtoP);
}

TEST(CuptiConvert, PeerToPeerRecordNamesTheOtherDevice) {
  CUpti_ActivityMemcpyPtoP4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 1 << 20;
  m.start = 30, m.end = 90;
  m.deviceId = 0, m.srcDeviceId = 0, m.dstDeviceId = 3;
  m.streamId = 9;
  m.correlationId = 12;
  FakeHooks f;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&m), f.hooks());
  const auto& me = as<rec::MemcpyEvent>(e);
  EXPECT_EQ(me.copy, CopyKind::PtoP);
  EXPECT_EQ(me.device, 0);
  EXPECT_EQ(me.peer_device, 3);
  EXPECT_EQ(me.bytes, 1u << 20);
  EXPECT_TRUE(me.async);
  EXPECT_EQ(me.stream, 9u);
  EXPECT_EQ(me.correlation, 12u);
  m.deviceId = 3;  // recorded on the destination's side
  Event e2 = convert(reinterpret_cast<CUpti_Activity*>(&m), f.hooks());
  EXPECT_EQ(as<rec::MemcpyEvent>(e2).peer_device, 0);
}

TEST(CuptiConvert, MemsetRecordsAndNoMemoryRecords) {
  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.value = 0xff;
  s.bytes = 128;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  FakeHooks f;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&s), f.hooks());
  EXPECT_EQ(as<rec::MemsetEvent>(e).kind, MemKind::Managed);
  EXPECT_EQ(as<rec::MemsetEvent>(e).value, 0xffu);

  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(convert(reinterpret_cast<CUpti_Activity*>(&m), f.hooks())))
      << "allocations come from API callbacks: MEMORY2 records crash the driver and stay off";
}

// A synchronisation record of `type`, from 1 to 9 ns.
CUpti_ActivitySynchronization2 sync_record(CUpti_ActivitySynchronizationType type) {
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = 1, s.end = 9;
  return s;
}

TEST(CuptiConvert, SyncRecordsAndNoApiRecords) {
  FakeHooks f;
  CUpti_ActivitySynchronization2 s = sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  s.streamId = 3;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&s), f.hooks());
  EXPECT_EQ(as<rec::SyncEvent>(e).kind, SyncKind::Stream);
  EXPECT_EQ(as<rec::SyncEvent>(e).stream, 3u);

  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(convert(reinterpret_cast<CUpti_Activity*>(&a), f.hooks())))
      << "API calls come from callbacks, only those the detectors read";
}

// CUPTI reports a cudaEventQuery as an event synchronisation; the host did not wait in it.
TEST(CuptiConvert, TheSyncRecordOfAQueryIsNoSync) {
  FakeHooks f;
  CUpti_ActivitySynchronization2 s = sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
  s.correlationId = 88;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(convert(reinterpret_cast<CUpti_Activity*>(&s), f.hooks())));
  s.correlationId = 89;
  Event e = convert(reinterpret_cast<CUpti_Activity*>(&s), f.hooks());
  EXPECT_EQ(as<rec::SyncEvent>(e).kind, SyncKind::Event) << "a cudaEventSynchronize";
}

TEST(CuptiConvert, KindNumberingDiffersFromNsysAndIsMapped) {
  EXPECT_EQ(mem_kind(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), MemKind::Pageable);  // 1 in CUPTI, 0 in nsys
  EXPECT_EQ(mem_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), MemKind::Pinned);
  EXPECT_EQ(mem_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC), MemKind::Device);
  EXPECT_EQ(mem_kind(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN), MemKind::Unknown);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), CopyKind::DtoH);
  EXPECT_EQ(copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), CopyKind::DtoD);
  EXPECT_EQ(sync_kind(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE), SyncKind::Event);
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_MARKER;
  FakeHooks f;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(convert(&other, f.hooks())));
}

}  // namespace
}  // namespace gpudiag::cupti
