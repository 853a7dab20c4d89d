// GD008 out-of-memory: the failing request with the memory live at that
// moment by stack and the device's capacity, once per failure.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(OutOfMemory, ReportsLiveMemoryByStackAndCapacity) {
  Trace t;
  alloc(t, 10, 0x1000, 6u << 20, 0, stack_named(t, "weights"));
  alloc(t, 20, 0x800000, 2u << 20, 0, stack_named(t, "activations"));
  t.memory_counters.push_back({.time_ns = 25, .device = 0, .allocated_bytes = 8u << 20, .reserved_bytes = 9u << 20});
  t.ooms.push_back({.time_ns = 30, .requested_bytes = 4u << 20, .free_bytes = 0, .capacity_bytes = 10u << 20,
                    .device = 0, .stack = stack_named(t, "forward")});
  const auto f = only(detect(t), "GD008");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("request for 4.00 MiB failed with 8.00 MiB live of 10.0 MiB capacity"),
            std::string::npos)
      << f[0].message;
  ASSERT_GE(f[0].notes.size(), 3u);
  EXPECT_NE(f[0].notes[0].message.find("1.00 MiB reserved but not allocated"), std::string::npos);
  EXPECT_EQ(f[0].notes[1].stack.at(0).function, "weights");  // the largest holder first
  Trace none;
  alloc(none, 10, 0x1000, 64, 0);
  EXPECT_TRUE(only(detect(none), "GD008").empty());
}

// The allocation call that failed and the out-of-memory event it raised are one
// failure, not two.
TEST(UncheckedCudaError, OneAllocationFailureWithItsEventIsReportedOnce) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("cudaMalloc"), .status = 2});
  t.ooms.push_back({.time_ns = 20, .requested_bytes = 1ull << 40, .capacity_bytes = 80ull << 30, .device = 0});
  const auto oom = only(detect(t), "GD008");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_NE(oom[0].message.find("a request for 1.00 TiB failed"), std::string::npos) << oom[0].message;
  EXPECT_NE(oom[0].message.find("of 80.0 GiB capacity"), std::string::npos) << oom[0].message;
}

// PyTorch's profiler writes the CPU allocator's failure as Device Type 0
// with the allocator's totals; a window that opened late saw none of the
// blocks, so the totals are what was live.
TEST(OutOfMemory, CpuAllocatorFailureInAKinetoTraceSaysWhatItsTotalsSay) {
  Trace t;
  t.source = TraceSource::Kineto;
  alloc(t, 10, 0x1000, 1u << 20, kHostDevice);
  t.memory_counters.push_back(
      {.time_ns = 30, .device = kHostDevice, .allocated_bytes = 3ull << 30, .reserved_bytes = 3ull << 30});
  t.ooms.push_back({.time_ns = 30, .requested_bytes = 2ull << 30, .device = kHostDevice});
  const auto f = only(detect(t), "GD008");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("out of memory on the host (PyTorch's CPU allocator): a request for 2.00 GiB failed "
                              "with 3.00 GiB live"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].message.find("pinned"), std::string::npos) << f[0].message;

  // In a CUDA trace the host's allocations are the pinned ones.
  Trace pinned;
  alloc(pinned, 10, 0x1000, 1u << 20, kHostDevice);
  pinned.ooms.push_back({.time_ns = 30, .requested_bytes = 2ull << 30, .device = kHostDevice});
  const auto p = only(detect(pinned), "GD008");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("out of memory on the host (pinned memory): a request for 2.00 GiB failed with "
                              "1.00 MiB live"),
            std::string::npos)
      << p[0].message;
}

}  // namespace
}  // namespace gpudiag
