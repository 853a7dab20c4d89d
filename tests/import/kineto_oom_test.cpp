// PyTorch's profiler records a failed allocation as an "[OutOfMemory]"
// instant event (args "Device Type", "Device Id", "Bytes", "Total
// Allocated", "Total Reserved"); the importer turns it into Trace::ooms so
// the out-of-memory rule works on PyTorch traces.
#include <gtest/gtest.h>

#include "gpudiag/trace_io.h"
#include "gpudiag/import/load_trace.h"

namespace gpudiag {
namespace {

TEST(KinetoOutOfMemory, InstantEventBecomesAnOutOfMemoryEvent) {
  const Trace t = import_kineto_bytes(R"json({"schemaVersion": 1, "traceEvents": [
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 5, "tid": 9, "ts": 100,
     "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 1048576, "Addr": 139872, "Device Id": 1, "Device Type": 1}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]", "pid": 5, "tid": 9, "ts": 200.5,
     "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 85899345920, "Device Id": 1, "Device Type": 1}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[OutOfMemory]", "pid": 5, "tid": 3, "ts": 300,
     "args": {"Bytes": 4096, "Device Id": 0, "Device Type": 0}},
    {"ph": "i", "name": "[OutOfMemory]", "ts": 400}
  ]})json", "oom.json");
  ASSERT_EQ(t.ooms.size(), 3u);
  const OutOfMemory& cuda = t.ooms[0];
  EXPECT_EQ(cuda.time_ns, 200500u);
  EXPECT_EQ(cuda.requested_bytes, 85899345920u);
  EXPECT_EQ(cuda.device, 1);
  EXPECT_EQ(cuda.tid, 9u);
  EXPECT_EQ(cuda.free_bytes, 0u) << "PyTorch does not say what was free";
  const OutOfMemory& cpu = t.ooms[1];
  EXPECT_EQ(cpu.device, kHostDevice) << "Device Type 0 is the CPU";
  EXPECT_EQ(cpu.requested_bytes, 4096u);
  EXPECT_EQ(t.ooms[2].time_ns, 400000u) << "kept without args: the failure itself is the news";
  EXPECT_EQ(t.ooms[2].requested_bytes, 0u);
  // The allocator's totals at the failure become a counter sample, so the
  // reserved-but-unallocated part can be told apart.
  ASSERT_EQ(t.memory_counters.size(), 2u);
  EXPECT_EQ(t.memory_counters[1].time_ns, 200500u);
  EXPECT_EQ(t.memory_counters[1].device, 1);
  EXPECT_EQ(t.memory_counters[1].allocated_bytes, 1048576u);
  EXPECT_EQ(t.memory_counters[1].reserved_bytes, 2097152u);
  EXPECT_EQ(t.allocs.size(), 1u) << "a failed request allocates nothing";
}

TEST(KinetoOutOfMemory, QuotedArgsOfOlderProfilersAreRead) {
  // Some PyTorch releases wrote these args as strings.
  const Trace t = import_kineto_bytes(
      R"([{"ph": "i", "name": "[OutOfMemory]", "ts": 1, "tid": 2, "args": {"Device Type": "1", "Device Id": "3", "Bytes": "512"}}])",
      "quoted.json");
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].device, 3);
  EXPECT_EQ(t.ooms[0].requested_bytes, 512u);
}

}  // namespace
}  // namespace gpudiag
