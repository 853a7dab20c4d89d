// Collectives of .gdtrace and nsys traces, found in NCCL's kernels and the
// NVTX ranges NCCL opens around its calls.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "gpudiag/import/collectives.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

constexpr const char* kAllReduceKernel = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

void range(Trace& t, std::uint64_t start, std::uint64_t end, const char* name, std::uint32_t tid = 7) {
  t.ranges.push_back({.start_ns = start, .end_ns = end, .name = t.intern(name), .tid = tid});
}

// NCCL launches with the driver's cuLaunchKernelEx; the recorder names what it launched.
StackId launch(Trace& t, std::uint64_t at, std::uint64_t correlation, const char* kernel = kAllReduceKernel, std::uint32_t tid = 7) {
  Stack s;
  s.frames.push_back({.ip = 0x1000 + correlation, .function = t.intern("ProcessGroupNCCL::allreduce")});
  const StackId stack = t.add_stack(s);
  t.api_calls.push_back({.start_ns = at, .end_ns = at + 5, .name = t.intern("cuLaunchKernelEx"), .domain = ApiDomain::Driver,
                         .device = 0, .tid = tid, .correlation = correlation, .stack = stack, .symbol = t.intern(kernel)});
  return stack;
}

void nccl_kernel(Trace& t, std::uint64_t start, std::uint64_t end, std::uint64_t correlation, const char* name = kAllReduceKernel) {
  t.kernels.push_back({.start_ns = start, .end_ns = end, .name = t.intern(name), .device = 0, .stream = 13, .correlation = correlation});
}

// What PyTorch does for each collective: ncclGroupStart, the call (which
// only queues it), ncclGroupEnd (which launches the kernel).
Trace grouped_all_reduce(StackId* stack = nullptr) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  range(t, 100, 110, "ncclGroupStart");
  range(t, 120, 130, "ncclAllReduce");
  range(t, 140, 200, "ncclGroupEnd");
  const StackId s = launch(t, 150, 5);
  if (stack) *stack = s;
  nccl_kernel(t, 160, 900, 5);
  return t;
}

TEST(FindCollectives, AGroupedCallAndTheKernelItsGroupLaunchedAreOneCollective) {
  StackId stack = 0;
  Trace t = grouped_all_reduce(&stack);
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 1u);
  const Collective& c = t.collectives[0];
  EXPECT_EQ(t.str(c.op), "all_reduce");
  EXPECT_EQ(c.begin_ns, 120u) << "from the call";
  EXPECT_EQ(c.end_ns, 900u) << "to the kernel's end";
  EXPECT_EQ(c.device, 0);
  EXPECT_EQ(c.stream, 13u);
  EXPECT_EQ(c.tid, 7u);
  EXPECT_EQ(c.stack, stack) << "the launch's stack";
  EXPECT_EQ(c.bytes, 0u) << "NVTX says no size";
  EXPECT_EQ(c.group, 0u);
  EXPECT_EQ(c.seq, Collective::kNoSeq);
  EXPECT_FALSE(c.unfinished);
}

TEST(FindCollectives, AnUngroupedCallLaunchesItsKernelItself) {
  Trace t;
  range(t, 100, 200, "ncclBroadcast");
  launch(t, 150, 5, "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)");
  nccl_kernel(t, 160, 700, 5, "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)");
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.str(t.collectives[0].op), "broadcast");
  EXPECT_EQ(t.collectives[0].begin_ns, 100u);
  EXPECT_EQ(t.collectives[0].end_ns, 700u);
}

TEST(FindCollectives, AKernelWithNoRangeIsACollectiveOfItsOwn) {
  Trace t;
  const StackId stack = launch(t, 50, 5, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  nccl_kernel(t, 60, 400, 5, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  nccl_kernel(t, 500, 600, 0, "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)");
  t.kernels.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("void gemm<float>(float*, int)"), .device = 0});
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 2u) << "the gemm is none";
  EXPECT_EQ(t.str(t.collectives[0].op), "send_recv");
  EXPECT_EQ(t.collectives[0].begin_ns, 60u);
  EXPECT_EQ(t.collectives[0].end_ns, 400u);
  EXPECT_EQ(t.collectives[0].tid, 7u) << "its launch's thread";
  EXPECT_EQ(t.collectives[0].stack, stack);
  EXPECT_EQ(t.str(t.collectives[1].op), "all_gather");
  EXPECT_EQ(t.collectives[1].tid, 0u);
}

// The process was killed inside the collective (a peer never came): the
// launch is in the trace, its kernel never completed, so never came.
TEST(FindCollectives, ALaunchWhoseKernelNeverCameIsUnfinished) {
  Trace t = grouped_all_reduce();
  range(t, 1000, 1010, "ncclAllReduce");
  launch(t, 1005, 6, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");  // as CUPTI names it
  launch(t, 2000, 7, "_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm4096EE", 8);  // on a thread with no range
  t.api_calls.push_back({.start_ns = 5000, .end_ns = 5100, .name = t.intern("cudaStreamSynchronize"), .tid = 7});
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 3u);
  EXPECT_FALSE(t.collectives[0].unfinished);
  EXPECT_EQ(t.str(t.collectives[1].op), "all_reduce");
  EXPECT_TRUE(t.collectives[1].unfinished);
  EXPECT_EQ(t.collectives[1].begin_ns, 1000u);
  EXPECT_EQ(t.collectives[1].end_ns, 5100u) << "it ran at least to the trace's end";
  EXPECT_EQ(t.str(t.collectives[2].op), "broadcast");
  EXPECT_TRUE(t.collectives[2].unfinished);
  EXPECT_EQ(t.collectives[2].begin_ns, 2000u);
  EXPECT_EQ(t.collectives[2].tid, 8u);
}

TEST(FindCollectives, ACallWhoseLaunchIsTheTracesOnlyNcclWorkIsUnfinished) {
  Trace t;
  range(t, 100, 200, "ncclAllReduce");
  launch(t, 150, 5);
  t.api_calls.push_back({.start_ns = 300, .end_ns = 9000, .name = t.intern("cudaStreamSynchronize"), .tid = 7});
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_TRUE(t.collectives[0].unfinished);
  EXPECT_EQ(t.collectives[0].end_ns, 9000u);
}

TEST(FindCollectives, ACallWithoutItsKernelWhereOthersHaveThemIsUnfinished) {
  Trace t = grouped_all_reduce();
  range(t, 1000, 1010, "ncclAllReduce");  // its launch was not recorded either
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_TRUE(t.collectives[1].unfinished);
}

TEST(FindCollectives, CallsOfATraceWithoutGpuActivityAreTheirRanges) {
  Trace t;
  range(t, 100, 110, "ncclGroupStart");
  range(t, 120, 130, "ncclReduceScatter");
  range(t, 140, 200, "ncclGroupEnd");
  range(t, 300, 400, "ncclAllGather");
  range(t, 500, 600, "allreduce");  // the program's own range: not NCCL's
  range(t, 700, 800, "ncclCommInitRank");
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.str(t.collectives[0].op), "reduce_scatter");
  EXPECT_EQ(t.collectives[0].end_ns, 130u);
  EXPECT_FALSE(t.collectives[0].unfinished);
  EXPECT_EQ(t.str(t.collectives[1].op), "all_gather");
  EXPECT_EQ(t.collectives[1].device, kHostDevice) << "unsaid";
}

TEST(FindCollectives, CollectivesAreInTimeOrder) {
  Trace t;
  nccl_kernel(t, 900, 950, 0);
  range(t, 100, 200, "ncclBroadcast", 9);
  nccl_kernel(t, 300, 350, 0);
  find_collectives(t);
  ASSERT_EQ(t.collectives.size(), 3u);
  EXPECT_EQ(t.collectives[0].begin_ns, 100u);
  EXPECT_EQ(t.collectives[1].begin_ns, 300u);
  EXPECT_EQ(t.collectives[2].begin_ns, 900u);
}

TEST(FindCollectives, LoadTraceFindsThemInAGdtrace) {
  const std::string path = test::temp_path("collectives.gdtrace");
  write_gdtrace(grouped_all_reduce(), path);
  const Trace t = load_trace(path);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.str(t.collectives[0].op), "all_reduce");
  EXPECT_EQ(t.collectives[0].begin_ns, 120u);
  EXPECT_EQ(t.collectives[0].end_ns, 900u);
}

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

TEST(FindCollectives, LoadTraceFindsThemInAnNsysExport) {
  const std::string path = test::temp_path("collectives.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, R"(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,
  streamId INT NOT NULL, correlationId INT, globalPid INT, demangledName INT NOT NULL, shortName INT NOT NULL, mangledName INT,
  gridX INT NOT NULL, gridY INT NOT NULL, gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL, blockZ INT NOT NULL,
  staticSharedMemory INT NOT NULL, dynamicSharedMemory INT NOT NULL, registersPerThread INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT NOT NULL, end INT NOT NULL, eventClass INT NOT NULL, globalTid INT,
  correlationId INT, nameId INT NOT NULL, returnValue INT NOT NULL, callchainId INT);
CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT, color INT, text TEXT,
  globalTid INT, endGlobalTid INT, textId INT, domainId INT, uint64Value INT, int64Value INT, doubleValue REAL, uint32Value INT,
  int32Value INT, floatValue REAL, jsonTextId INT, jsonText TEXT);
INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
  (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'), (3, 'cuLaunchKernelEx');
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (100, 110, 59, 'ncclGroupStart', 4242),
  (120, 130, 59, 'ncclAllReduce', 4242), (140, 200, 59, 'ncclGroupEnd', 4242);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (150, 160, 1, 4242, 5, 3, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (170, 900, 0, 1, 13, 5, 1, 1, 2, 0, 8, 1, 1, 512, 1, 1, 0, 0, 32);
)");
  sqlite3_close(db);
  const Trace t = load_trace(path);
  ASSERT_EQ(t.source, TraceSource::Nsys);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.str(t.collectives[0].op), "all_reduce");
  EXPECT_EQ(t.collectives[0].begin_ns, 120u);
  EXPECT_EQ(t.collectives[0].end_ns, 900u);
  EXPECT_EQ(t.collectives[0].stream, 13u);
}

}  // namespace
}  // namespace gpudiag
