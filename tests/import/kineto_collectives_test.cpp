// The collectives of Kineto traces: a real two-rank CPU DDP job with gloo
// (data/ddp-gloo-2), and excerpts of real NCCL jobs' traces from
// HolisticTraceAnalysis' test data (tests/data/nccl_parser_config/
// nccl_data.json.gz: PyTorch 2.x with NCCL 2.17; tests/data/trace_filter/
// sampled_rank-0.json.gz: an older PyTorch whose records name nothing;
// tests/data/cpu_only/rank-34...pt.trace.json.gz: gloo with record_shapes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpudiag/import/load_trace.h"

namespace gpudiag {
namespace {

Trace import(const std::string& events, const std::string& top = "") {
  return import_kineto_bytes("{" + top + R"j("traceEvents": [)j" + events + "]}", "collectives.json");
}

std::string str(const Trace& t, StringId id) { return std::string(t.str(id)); }

// nccl_data.json.gz: one all_reduce of DDP, from the call to its kernel.
const std::string kCall =
    R"j({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 2910249, "tid": 2919752, "ts": 4458676524595.135, "dur": 294.37, "args": {"External id": 2098, "Record function id": 1958, "Ev Idx": 49}})j";
std::string record(const std::string& extra = "") {
  return R"j({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 2910249, "tid": 2919752, "ts": 4458676524648.797, "dur": 189.626, "args": {"External id": 2099, "Record function id": 1959, "Process Group Name": "0", "Global rank stride": 1, "Out msg nelems": 2049000, "Process Group Ranks": "[0, 1]", "Group size": 2, "Global rank start": 0, "Ev Idx": 50, "In msg nelems": 2049000, "In split size": "[]", "Out split size": "[]", "dtype": "Float", "Process Group Description": "default_pg", )j" +
         extra + R"j("Collective name": "allreduce"}})j";
}
const std::string kAnnotation =
    R"j({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 2910249, "tid": 2919752, "ts": 4458676524670.502, "dur": 92.804, "args": {"External id": 2100, "Record function id": 1960, "Ev Idx": 51}})j";
const std::string kLaunch =
    R"j({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 2910249, "tid": 2919752, "ts": 4458676524703.113, "dur": 11.862, "args": {"External id": 2099, "cbid": 430, "correlation": 25941}})j";
std::string kernel(const std::string& external_id = R"j("External id": 2099, )j") {
  return R"j({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 40, "ts": 4458676524716.094, "dur": 3306.963, "args": {)j" +
         external_id +
         R"j("queued": 0, "device": 0, "context": 1, "stream": 40, "correlation": 25941, "registers per thread": 96, "shared memory": 87568, "blocks per SM": 0.074074, "warps per SM": 1.259259, "grid": [8, 1, 1], "block": [544, 1, 1], "est. achieved occupancy %": 0, "Collective name": "allreduce", "In msg nelems": 2049000, "Out msg nelems": 2049000, "Group size": 2, "dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"}})j";
}
constexpr std::uint64_t kRecordBegin = 4458676524648797, kKernelEnd = 4458676524716094 + 3306963;

void expect_the_all_reduce(const Trace& t) {
  ASSERT_EQ(t.collectives.size(), 1u);
  const Collective& c = t.collectives[0];
  EXPECT_EQ(str(t, c.op), "all_reduce");
  EXPECT_EQ(str(t, c.group), "0");
  EXPECT_EQ(c.bytes, 2049000u * 4);
  EXPECT_EQ(c.begin_ns, kRecordBegin) << "from the call";
  EXPECT_EQ(c.end_ns, kKernelEnd) << "to its kernel's end";
  EXPECT_EQ(c.device, 0);
  EXPECT_EQ(c.stream, 40u);
  EXPECT_EQ(c.tid, 2919752u);
  EXPECT_FALSE(c.unfinished);
}

TEST(KinetoCollectives, ARecordParamCommsAndItsKernelAreOneCollective) {
  const Trace t = import(kCall + "," + record() + "," + kAnnotation + "," + kLaunch + "," + kernel());
  expect_the_all_reduce(t);
  EXPECT_EQ(t.collectives[0].seq, Collective::kNoSeq) << "this PyTorch says no sequence number";
  EXPECT_EQ(t.kernels.size(), 1u) << "the kernel stays a kernel";
}

TEST(KinetoCollectives, AKernelWithoutItsLinkBelongsToTheRecordItsLaunchLiesIn) {
  expect_the_all_reduce(import(kCall + "," + record() + "," + kAnnotation + "," + kLaunch + "," + kernel("")));
}

TEST(KinetoCollectives, TheRecordSaysItsSequenceNumber) {
  for (const char* key : {"Seq", "seq"}) {
    const Trace t = import(record(std::string("\"") + key + "\": 17, ") + "," + kLaunch + "," + kernel());
    ASSERT_EQ(t.collectives.size(), 1u);
    EXPECT_EQ(t.collectives[0].seq, 17) << key;
  }
}

TEST(KinetoCollectives, AKernelWithNoRecordIsACollectiveOfItsOwn) {
  const Trace bare = import(
      R"j({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"device": 1, "stream": 7, "correlation": 5}})j");
  ASSERT_EQ(bare.collectives.size(), 1u);
  EXPECT_EQ(str(bare, bare.collectives[0].op), "all_reduce");
  EXPECT_EQ(bare.collectives[0].begin_ns, 100000u);
  EXPECT_EQ(bare.collectives[0].end_ns, 150000u);
  EXPECT_EQ(bare.collectives[0].device, 1);
  EXPECT_EQ(bare.collectives[0].stream, 7u);
  EXPECT_EQ(bare.collectives[0].bytes, 0u) << "unsaid";
  // Kineto copies its record's fields onto the kernel: they still say it.
  const Trace copied = import(kernel());
  ASSERT_EQ(copied.collectives.size(), 1u);
  EXPECT_EQ(str(copied, copied.collectives[0].op), "all_reduce");
  EXPECT_EQ(copied.collectives[0].bytes, 2049000u * 4);
  EXPECT_EQ(str(copied, copied.collectives[0].group), "0");
}

// sampled_rank-0.json.gz: records with no name; the call around says the
// collective, record_shapes the sizes; the kernel carries no link.
TEST(KinetoCollectives, OlderRecordsTakeTheirCollectiveFromTheCallAroundThem) {
  const Trace t = import(
      R"j({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 4037, "tid": 23695, "ts": 1682725898240951, "dur": 144.0, "args": {"External id": 41955, "Ev Idx": 27618, "Input Dims": [[], [], [], []], "Input type": ["TensorList", "", "", "Scalar"]}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4037, "tid": 23695, "ts": 1682725898240960, "dur": 134.0, "args": {"External id": 41956, "Ev Idx": 27619, "Input Dims": [[], [], [], [], [], [], []], "Input type": ["TensorList", "Scalar", "Scalar", "Scalar", "", "", ""]}},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 4037, "tid": 23695, "ts": 1682725898240982, "dur": 105.0, "args": {"External id": 41957, "Ev Idx": 27620, "Input Dims": [[19618307]], "Input type": ["float"]}},
      {"ph": "X", "cat": "cpu_op", "name": "c10d::alltoall_base_", "pid": 4037, "tid": 4037, "ts": 1682725898094185, "dur": 277.0, "args": {"External id": 71476, "Ev Idx": 179542, "Input Dims": [[384], [384], [], [], [], []], "Input type": ["long", "long", "", "", "", "Scalar"]}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4037, "tid": 4037, "ts": 1682725898094192, "dur": 269.0, "args": {"External id": 71477, "Ev Idx": 179543, "Input Dims": [[384], [], [], [], [], [], []], "Input type": ["long", "Scalar", "Scalar", "Scalar", "", "", ""]}},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 4037, "tid": 4037, "ts": 1682725898094211, "dur": 242.0, "args": {"External id": 71478, "Ev Idx": 179544, "Input Dims": [[384]], "Input type": ["long"]}},
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 84, "ts": 1682725898094377, "dur": 30669.0, "args": {"External id": 6937369, "queued": 0, "device": 0, "context": 1, "stream": 84, "correlation": 6937369, "registers per thread": 96, "shared memory": 41744, "blocks per SM": 0.14814815, "warps per SM": 2.962963, "grid": [16, 1, 1], "block": [640, 1, 1], "est. achieved occupancy %": 5}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4037, "tid": 4037, "ts": 1682725898094364, "dur": 13.0, "args": {"External id": 6937369, "cbid": 211, "correlation": 6937369}})j");
  ASSERT_EQ(t.collectives.size(), 2u);
  const Collective& all_to_all = t.collectives[0];  // in time order
  EXPECT_EQ(str(t, all_to_all.op), "all_to_all") << "the call's, not the SendRecv kernel's";
  EXPECT_EQ(all_to_all.bytes, 384u * 8);
  EXPECT_EQ(all_to_all.begin_ns, 1682725898094192000u);
  EXPECT_EQ(all_to_all.end_ns, (1682725898094377u + 30669u) * 1000) << "its kernel's end";
  EXPECT_EQ(all_to_all.stream, 84u);
  const Collective& all_reduce = t.collectives[1];
  EXPECT_EQ(str(t, all_reduce.op), "all_reduce");
  EXPECT_EQ(all_reduce.bytes, 19618307u * 4) << "the annotation's shape";
  EXPECT_TRUE(all_reduce.unfinished) << "its kernel is not in the trace, as other NCCL kernels are";
}

TEST(KinetoCollectives, RecordsOfNoCollectiveAndTheirKernelsAreNone) {
  const Trace t = import(
      R"j({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 4458676426133.574, "dur": 36.688, "args": {"External id": 174, "Collective name": "wait", "dtype": "Byte", "Out split size": "[]", "In msg nelems": 0, "Group size": 1, "Process Group Ranks": "[]", "Record function id": 174, "Out msg nelems": 0, "In split size": "[]", "Ev Idx": 7373}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 100, "dur": 10, "args": {"External id": 9, "Collective name": "coalesced"}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 105, "dur": 1, "args": {"External id": 9, "correlation": 3}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7, "ts": 106, "dur": 5, "args": {"External id": 9, "device": 0, "stream": 7, "correlation": 3}})j");
  EXPECT_TRUE(t.collectives.empty()) << t.collectives.size();
}

// cpu_only/rank-34...: gloo with record_shapes, the call before the profiler started.
TEST(KinetoCollectives, AGlooRunWithoutItsCallIsACollectiveWithItsShape) {
  const Trace t = import(
      R"j({"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1074, "tid": 3553, "ts": 1212075548353.304, "dur": 173209.713, "args": {"External id": 1025, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Dims": [[321271]], "Ev Idx": 0}})j");
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(str(t, t.collectives[0].op), "all_reduce");
  EXPECT_EQ(t.collectives[0].bytes, 321271u * 4);
  EXPECT_EQ(t.collectives[0].tid, 0u) << "gloo's worker did not call it";
  EXPECT_EQ(t.collectives[0].device, kHostDevice);
  EXPECT_FALSE(t.collectives[0].unfinished);
}

// The real two-rank gloo job: each rank calls c10d::allreduce_ once a step
// (3 profiled steps), and gloo's workers run each: three collectives a
// rank, from the call to the end of gloo's run.
TEST(KinetoCollectives, EachRankOfARealGlooJobHasOneCollectivePerCall) {
  struct Expected {
    std::uint32_t tid;
    std::uint64_t begin_us[3], end_ns[3];
  };
  const Expected ranks[2] = {
      {22133,
       {5036776393442, 5036776420065, 5036776431317},
       {5036776393633584 + 419092, 5036776420220203 + 319357, 5036776431383362 + 4053464}},
      {22134,
       {5036776385120, 5036776397832, 5036776434984},
       {5036776385326579 + 8666354, 5036776398005861 + 22598528, 5036776435135832 + 1841230}},
  };
  std::vector<Trace> traces;
  for (int rank : {0, 1}) {
    traces.push_back(load_trace(IMPORT_TEST_DIR "/data/ddp-gloo-2/rank" + std::to_string(rank) + ".kineto.json.gz"));
    const Trace& t = traces.back();
    ASSERT_EQ(t.collectives.size(), 3u) << "rank " << rank << ": one per call, not per call and run";
    for (std::size_t i = 0; i < 3; ++i) {
      const Collective& c = t.collectives[i];
      EXPECT_EQ(str(t, c.op), "all_reduce");
      EXPECT_EQ(c.tid, ranks[rank].tid) << "the calling thread, not gloo's worker";
      EXPECT_EQ(c.begin_ns / 1000, ranks[rank].begin_us[i]) << rank << " " << i;
      EXPECT_EQ(c.end_ns, ranks[rank].end_ns[i]) << rank << " " << i;
      EXPECT_EQ(c.bytes, 0u) << "profiled without record_shapes: unsaid";
      EXPECT_EQ(c.device, kHostDevice);
      EXPECT_EQ(c.group, 0u);
      EXPECT_EQ(c.seq, Collective::kNoSeq);
      EXPECT_FALSE(c.unfinished);
    }
  }
  // An all_reduce completes on no rank before the last rank called it:
  // on the one time line of the epoch, each rank's i-th ends after both began.
  for (std::size_t i = 0; i < 3; ++i) {
    const auto epoch = [&](int rank, std::uint64_t ns) { return traces[rank].job.epoch_offset_ns + static_cast<std::int64_t>(ns); };
    for (int rank : {0, 1})
      for (int other : {0, 1})
        EXPECT_GT(epoch(rank, traces[rank].collectives[i].end_ns), epoch(other, traces[other].collectives[i].begin_ns))
            << i << " " << rank << " " << other;
  }
}

const std::string kWindowEnd = R"j({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1000})j";

std::string gloo_call(int ts) {
  return R"j({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1, "ts": )j" + std::to_string(ts) +
         R"j(, "dur": 5, "args": {"External id": 1}})j";
}

TEST(KinetoCollectives, ACallWhoseRunTheTraceLacksIsUnfinished) {
  const Trace t = import(gloo_call(100) + "," + gloo_call(900) + "," +
                         R"j({"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 101, "dur": 50}, )j" +
                         kWindowEnd);
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_FALSE(t.collectives[0].unfinished);
  EXPECT_EQ(t.collectives[0].end_ns, 151000u);
  EXPECT_TRUE(t.collectives[1].unfinished) << "gloo had not run it when the profiler stopped";
  EXPECT_EQ(t.collectives[1].begin_ns, 900000u);
  EXPECT_EQ(t.collectives[1].end_ns, 1000000u) << "it ran at least until the trace's end";
}

TEST(KinetoCollectives, ACollectiveRunningPastTheTracesEndIsUnfinished) {
  const std::string record_at_900 =
      R"j({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 900, "dur": 20, "args": {"External id": 4, "Collective name": "broadcast"}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Broadcast_RING_LL", "pid": 0, "tid": 7, "ts": 910, "dur": 500, "args": {"External id": 4, "device": 0, "stream": 7, "correlation": 3}}, )j";
  const Trace t = import(record_at_900 + kWindowEnd);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_TRUE(t.collectives[0].unfinished);
  const Trace before = import(record_at_900 + R"j({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 2000})j");
  ASSERT_EQ(before.collectives.size(), 1u);
  EXPECT_FALSE(before.collectives[0].unfinished);
}

TEST(KinetoCollectives, GarbageInTheArgsLeavesThemUnsaid) {
  const char* garbage[] = {
      R"j("In msg nelems": "lots", "dtype": "Float", "Seq": "first", "Process Group Name": {"a": 1})j",
      R"j("In msg nelems": -5, "dtype": "Float", "Seq": -1, "Process Group Name": [1, 2])j",
      R"j("In msg nelems": 1e300, "dtype": "Float", "Seq": 1e40, "Process Group Name": null)j",
      R"j("In msg nelems": 12, "dtype": "Quux", "Seq": [3], "Process Group Name": true)j",
      R"j("In msg nelems": [12], "dtype": 7, "seq": {"n": 1}, "External id": "x")j",
      R"j("In msg nelems": 12, "dtype": ["Float"], "External id": -4, "Input Dims": "x", "Input type": 3)j",
      R"j("Input Dims": [[-1]], "Input type": ["float"], "External id": 1e300)j",
      R"j("Input Dims": [["a", 2], 5, {}], "Input type": [[], "float"])j",
      R"j("Input Dims": [[1e300, 1e300]], "Input type": ["float"])j",
  };
  for (const char* args : garbage) {
    for (const char* name : {"record_param_comms", "gloo:all_reduce"}) {
      const std::string collective = std::string(name) == "record_param_comms" ? R"j(, "Collective name": "allreduce")j" : "";
      const std::string event = std::string(R"j({"ph": "X", "cat": "cpu_op", "name": ")j") + name +
                                R"j(", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {)j" + args + collective + "}}";
      const Trace t = import(event + R"j(, {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 7, "ts": 11, "dur": 5, "args": {)j" +
                             args + R"j(, "device": 0, "stream": 7}})j");
      ASSERT_FALSE(t.collectives.empty()) << args;
      for (const Collective& c : t.collectives) {
        EXPECT_EQ(str(t, c.op), "all_reduce") << args;
        EXPECT_EQ(c.bytes, 0u) << name << " " << args;
        EXPECT_EQ(c.seq, Collective::kNoSeq) << args;
        EXPECT_EQ(c.group, 0u) << args;
      }
    }
  }
}

}  // namespace
}  // namespace gpudiag
