#include <gtest/gtest.h>

#include "gpudiag/analysis/memory_timeline.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(MemoryTimeline, LiveBytesPeakAndWhatIsLiveAtThePeak) {
  Trace t;
  const StackId a = stack_named(t, "make_weights");
  const StackId b = stack_named(t, "make_activations");
  alloc(t, 10, 0x1000, 100, 0, a);
  alloc(t, 20, 0x2000, 300, 0, b);
  alloc(t, 25, 0x3000, 50, 0, b);
  free_at(t, 30, 0x2000);
  alloc(t, 40, 0x4000, 10, 0, a);
  const MemoryTimeline m = build_memory_timeline(t);
  ASSERT_EQ(m.devices.size(), 1u);
  const DeviceMemory& d = m.devices[0];
  EXPECT_EQ(d.peak_bytes, 450u);
  EXPECT_EQ(d.peak_ns, 25u);
  EXPECT_EQ(live_bytes_at(d, 5), 0u);
  EXPECT_EQ(live_bytes_at(d, 22), 400u);
  EXPECT_EQ(live_bytes_at(d, 35), 150u);
  EXPECT_EQ(d.live_at_peak.size(), 3u);
  const auto groups = group_by_stack(d, d.live_at_peak);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].stack, b);
  EXPECT_EQ(groups[0].bytes, 350u);
  EXPECT_EQ(groups[0].count, 2u);
  EXPECT_EQ(d.leaked.size(), 3u);  // 0x1000, 0x3000, 0x4000
}

TEST(MemoryTimeline, SeparatesDevicesAndCountsUnmatchedAndDoubleFrees) {
  Trace t;
  alloc(t, 1, 0x10, 8, 0);
  alloc(t, 2, 0x10, 16, 1);
  free_at(t, 3, 0x10, 0);
  free_at(t, 4, 0x10, 0);       // double free on device 0
  free_at(t, 5, 0x999, 1);      // allocated before the trace
  const MemoryTimeline m = build_memory_timeline(t);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.device(0)->double_frees.size(), 1u);
  EXPECT_EQ(m.device(0)->unmatched_frees, 0u);
  EXPECT_EQ(m.device(1)->unmatched_frees, 1u);
  EXPECT_EQ(m.device(1)->leaked.size(), 1u);
  EXPECT_EQ(m.peak_bytes(), 16u);
}

TEST(MemoryTimeline, FindsLiveAndFreedBlocksByAddress) {
  Trace t;
  alloc(t, 10, 0x1000, 0x100, 0);
  free_at(t, 20, 0x1000);
  alloc(t, 30, 0x1080, 0x10, 0);
  const MemoryTimeline m = build_memory_timeline(t);
  const DeviceMemory& d = m.devices[0];
  ASSERT_NE(block_containing(d, 0x10ff, 15), nullptr);
  EXPECT_EQ(block_containing(d, 0x1100, 15), nullptr);
  EXPECT_EQ(block_containing(d, 0x1010, 25), nullptr);
  const Block* freed = freed_block_containing(d, 0x1010, 25);
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ(freed->addr, 0x1000u);
  EXPECT_EQ(freed_block_containing(d, 0x1084, 35), nullptr);  // re-allocated: live again
}

// A long run allocates at the same addresses thousands of times: the block
// live at a time, or the last one freed before it, is each address's newest
// allocated by then.
TEST(MemoryTimeline, AnAddressReusedManyTimesGivesTheBlockOfThatTime) {
  Trace t;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    alloc(t, 100 * i + 10, 0x1000, 0x100, 0);
    free_at(t, 100 * i + 50, 0x1000);
    alloc(t, 100 * i + 20, 0x2000, 0x40, 0);
    free_at(t, 100 * i + 90, 0x2000);
  }
  const MemoryTimeline m = build_memory_timeline(t);
  const DeviceMemory& d = m.devices[0];
  const Block* live = block_containing(d, 0x1010, 100 * 3210 + 30);
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live->alloc_ns, 100 * 3210 + 10u);
  EXPECT_EQ(block_containing(d, 0x1010, 100 * 3210 + 60), nullptr);
  const Block* freed = freed_block_containing(d, 0x1010, 100 * 3210 + 60);
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ(freed->free_ns, 100 * 3210 + 50u);
  const Block* other = block_containing(d, 0x2020, 100 * 4999 + 89);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->alloc_ns, 100 * 4999 + 20u);
  EXPECT_EQ(freed_block_containing(d, 0x2020, 5), nullptr) << "nothing freed yet";
}

// An address reused for a smaller block: a pointer past its end is still
// inside the larger block that was freed there before.
TEST(MemoryTimeline, AnAddressReusedForASmallerBlockStillFindsTheLargerFreedOne) {
  Trace t;
  alloc(t, 1, 0x1000, 1 << 20, 0);
  free_at(t, 2, 0x1000);
  alloc(t, 3, 0x1000, 256, 0);
  const MemoryTimeline m = build_memory_timeline(t);
  const Block* freed = freed_block_containing(m.devices[0], 0x1000 + 512, 4);
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ(freed->bytes, 1u << 20);
  EXPECT_EQ(block_containing(m.devices[0], 0x1000 + 512, 4), nullptr);
  EXPECT_NE(block_containing(m.devices[0], 0x1000 + 16, 4), nullptr);
}

TEST(MemoryTimeline, EqualStacksGroupAsOneCallSite) {
  Trace t;
  const StackId a1 = stack_named(t, "make_weights", "unet.cpp", 7);
  const StackId a2 = stack_named(t, "make_weights", "unet.cpp", 7);  // recorded again, same frames
  const StackId b = stack_named(t, "make_weights", "unet.cpp", 9);
  alloc(t, 1, 0x1000, 10, 0, a1);
  alloc(t, 2, 0x2000, 20, 0, a2);
  alloc(t, 3, 0x3000, 5, 0, b);
  const MemoryTimeline m = build_memory_timeline(t);
  EXPECT_EQ(m.canonical_stack(a2), a1);
  const auto groups = group_by_stack(m.devices[0], m.devices[0].live_at_peak);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].bytes, 30u);
  EXPECT_EQ(groups[0].count, 2u);
}

TEST(MemoryTimeline, KeepsAllocatorCounters) {
  Trace t;
  t.memory_counters.push_back({.time_ns = 1, .device = 0, .allocated_bytes = 100, .reserved_bytes = 400});
  t.memory_counters.push_back({.time_ns = 2, .device = 0, .allocated_bytes = 300, .reserved_bytes = 500});
  const MemoryTimeline m = build_memory_timeline(t);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].peak_allocated_counter, 300u);
  EXPECT_EQ(m.devices[0].peak_reserved, 500u);
}

}  // namespace
}  // namespace gpudiag
