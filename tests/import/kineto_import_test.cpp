// The Kineto importer on every real trace in the shared data folder: its
// counts must equal those of an independent Python reading of the same file
// (kineto_counts.py); plus synthetic traces for each category and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "gpudiag/trace_io.h"
#include "gpudiag/import/load_trace.h"
#include "kineto_json.h"
#include "run_command.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> real_traces() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(GPUDIAG_SHARED_DATA_DIR) / "traces";
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".json") || name.ends_with(".json.gz")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Counts computed once by kineto_counts.py, used when python3 is missing.
const std::map<std::string, std::string> kRecordedCounts = {
    {"a100-alexnet.trace.json.gz", R"({"kernels": 79, "memcpys": 16, "memsets": 3, "allocs": 0, "frees": 0, "memory_counters": 0, "api_calls": 361, "syncs": 41, "pageable_htod": 16, "profiler_steps": 0, "dataloader_batches": 0})"},
    {"a100-event-sync-multistream.trace.json.gz", R"({"kernels": 3, "memcpys": 0, "memsets": 3, "allocs": 0, "frees": 0, "memory_counters": 0, "api_calls": 39, "syncs": 5, "pageable_htod": 0, "profiler_steps": 0, "dataloader_batches": 0})"},
    {"h100-vit-falconsai.trace.json.gz", R"({"kernels": 154, "memcpys": 0, "memsets": 2, "allocs": 310, "frees": 310, "memory_counters": 620, "api_calls": 383, "syncs": 2, "pageable_htod": 0, "profiler_steps": 1, "dataloader_batches": 0})"},
    {"v100-resnet50.trace.json.gz", R"({"kernels": 8772, "memcpys": 12, "memsets": 312, "allocs": 6420, "frees": 6418, "memory_counters": 0, "api_calls": 11923, "syncs": 13, "pageable_htod": 12, "profiler_steps": 6, "dataloader_batches": 6})"},
};

nlohmann::json independent_counts(const std::string& path) {
  if (fs::exists("/usr/bin/python3")) {
    const std::string cmd = "/usr/bin/python3 " IMPORT_TEST_DIR "/kineto_counts.py '" + path + "'";
    if (const test::CommandResult r = test::run_command(cmd, false); r.status == 0) return nlohmann::json::parse(r.out);
    ADD_FAILURE() << "kineto_counts.py failed on " << path;
  }
  auto it = kRecordedCounts.find(fs::path(path).filename().string());
  if (it == kRecordedCounts.end()) return {};
  return nlohmann::json::parse(it->second);
}

TEST(KinetoImport, EveryRealTraceMatchesAnIndependentCount) {
  const auto files = real_traces();
  ASSERT_GE(files.size(), 4u) << "expected the real traces in " << GPUDIAG_SHARED_DATA_DIR;
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    const nlohmann::json want = independent_counts(path);
    ASSERT_FALSE(want.is_null());
    const Trace t = import_kineto(path);
    EXPECT_EQ(t.source, TraceSource::Kineto);
    EXPECT_EQ(t.kernels.size(), want["kernels"].get<std::size_t>());
    EXPECT_EQ(t.memcpys.size(), want["memcpys"].get<std::size_t>());
    EXPECT_EQ(t.memsets.size(), want["memsets"].get<std::size_t>());
    EXPECT_EQ(t.allocs.size(), want["allocs"].get<std::size_t>());
    EXPECT_EQ(t.frees.size(), want["frees"].get<std::size_t>());
    EXPECT_EQ(t.memory_counters.size(), want["memory_counters"].get<std::size_t>());
    EXPECT_EQ(t.api_calls.size(), want["api_calls"].get<std::size_t>());
    EXPECT_EQ(t.syncs.size(), want["syncs"].get<std::size_t>());
    EXPECT_EQ(t.ooms.size(), want.value("ooms", std::size_t{0}));
    EXPECT_EQ(t.ranges.size(), want["profiler_steps"].get<std::size_t>() + want["dataloader_batches"].get<std::size_t>())
        << "the profiler's steps, new and old spelling, and the DataLoader's batches";
    std::size_t pageable_htod = 0;
    for (const auto& m : t.memcpys) pageable_htod += m.copy == CopyKind::HtoD && m.src_kind == MemKind::Pageable;
    EXPECT_EQ(pageable_htod, want["pageable_htod"].get<std::size_t>());
    // load_trace detects the format from the content.
    EXPECT_EQ(load_trace(path).event_count(), t.event_count());
  }
}

TEST(KinetoImport, ResNet50CopiesArePageableAsyncWithNanosecondTimes) {
  const std::string path = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/v100-resnet50.trace.json.gz";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not present";
  const Trace t = import_kineto(path);
  ASSERT_FALSE(t.memcpys.empty());
  const Memcpy& m = t.memcpys.front();
  EXPECT_EQ(m.src_kind, MemKind::Pageable);
  EXPECT_EQ(m.dst_kind, MemKind::Device);
  EXPECT_TRUE(m.async) << "launched by cudaMemcpyAsync (same correlation id)";
  EXPECT_EQ(m.bytes, 19267584u);
  EXPECT_EQ(m.end_ns - m.start_ns, 1940000u) << "dur 1940 us";
  EXPECT_EQ(m.stream, 7u);
  EXPECT_EQ(m.device, 0);
  // The 2021 format has no Addr in [memory] events but does have sizes.
  EXPECT_GT(t.allocs.front().bytes, 0u);
  const Kernel* k = nullptr;
  for (const auto& x : t.kernels)
    if (k == nullptr && t.str(x.name).starts_with("cask_cudnn::computeOffsetsKernel")) k = &x;
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->grid[0], 50u);
  EXPECT_EQ(k->block[0], 256u);
}

TEST(KinetoImport, VitMemoryEventsCarryAddressesAndTotals) {
  const std::string path = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/h100-vit-falconsai.trace.json.gz";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not present";
  const Trace t = import_kineto(path);
  std::size_t device_allocs = 0;
  for (const auto& a : t.allocs) {
    EXPECT_NE(a.addr, 0u);
    device_allocs += a.device == 0 && a.kind == MemKind::Device;
  }
  EXPECT_GT(device_allocs, 0u);
  ASSERT_FALSE(t.memory_counters.empty());
  EXPECT_EQ(t.memory_counters.front().allocated_bytes, 216081408u);
  EXPECT_EQ(t.memory_counters.front().reserved_bytes, 245366784u);
}

// CUPTI reports cudaEventQuery as an event sync: in this real trace three of
// the five syncs are the queries of a multi-stream program, which never
// waited. They are Query syncs, on the thread that queried.
TEST(KinetoImport, EventQueriesReportedAsEventSyncsAreQueries) {
  const Trace t = import_kineto(std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/a100-event-sync-multistream.trace.json.gz");
  std::map<SyncKind, int> kinds;
  for (const Sync& s : t.syncs) ++kinds[s.kind];
  EXPECT_EQ(kinds[SyncKind::Query], 3);
  EXPECT_EQ(kinds[SyncKind::Event], 0);
  EXPECT_EQ(kinds[SyncKind::StreamWaitEvent], 1);
  EXPECT_EQ(kinds[SyncKind::Context], 1);
  std::map<std::uint64_t, std::uint32_t> caller;
  for (const ApiCall& a : t.api_calls) caller[a.correlation] = a.tid;
  for (const Sync& s : t.syncs) {
    EXPECT_NE(s.tid, 0u) << "the thread of the call with correlation " << s.correlation;
    EXPECT_EQ(s.tid, caller[s.correlation]);
  }
}

TEST(KinetoImport, DevicePropertiesBecomeDevices) {
  const std::string path = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/a100-alexnet.trace.json.gz";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not present";
  const Trace t = import_kineto(path);
  const DeviceDesc* d = t.device(0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(t.str(d->name), "NVIDIA A100-PG509-200");
  EXPECT_EQ(d->memory_bytes, 42297524224u);
  EXPECT_FALSE(t.syncs.empty());
  EXPECT_EQ(t.syncs.front().kind, SyncKind::Stream);
}

TEST(KinetoImport, SyntheticTraceOfEachCategory) {
  const std::string json = R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "pid": 1, "tid": 11, "ts": 10, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 11, "dur": 2,
     "args": {"device": 1, "stream": 7, "correlation": 1, "bytes": 64}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 11, "ts": 20, "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 7, "ts": 21, "dur": 1.5, "args": {"device": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k<double>", "pid": 0, "tid": 7, "ts": 12.25, "dur": 3, "args": {"device": 1, "stream": 7, "grid": [2, 3, 4], "block": [32, 1, 1]}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 11, "ts": 1, "args": {"Addr": 4096, "Bytes": 512, "Device Id": 1, "Device Type": 1, "Total Allocated": 512, "Total Reserved": 2048}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 11, "ts": 30, "args": {"Addr": 4096, "Bytes": -512, "Device Id": 1, "Device Type": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 11, "ts": 9, "dur": 1}
  ]})json";
  const Trace t = import_kineto_bytes(json, "synthetic.json");
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].copy, CopyKind::DtoH);
  EXPECT_EQ(t.memcpys[0].dst_kind, MemKind::Pinned);
  EXPECT_FALSE(t.memcpys[0].async) << "cudaMemcpy is synchronous";
  EXPECT_EQ(t.memcpys[0].device, 1);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].start_ns, 12250u) << "fractional microseconds carry nanoseconds";
  EXPECT_EQ(t.kernels[0].grid[2], 4u);
  ASSERT_EQ(t.syncs.size(), 1u) << "cuda_sync events present: runtime calls are not counted again";
  EXPECT_EQ(t.syncs[0].kind, SyncKind::Event);
  EXPECT_EQ(t.syncs[0].end_ns - t.syncs[0].start_ns, 1500u);
  ASSERT_EQ(t.allocs.size(), 1u);
  ASSERT_EQ(t.frees.size(), 1u);
  EXPECT_EQ(t.frees[0].bytes, 512u);
  EXPECT_EQ(t.allocs[0].tid, 11u);
  ASSERT_EQ(t.memory_counters.size(), 1u);
  EXPECT_EQ(t.memory_counters[0].reserved_bytes, 2048u);
  EXPECT_EQ(t.api_calls.size(), 2u);
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.begin_ns(), 1000u);
}

TEST(KinetoImport, ProfilerStepsAreKeptAndOtherOperatorNamesAreNotParsed) {
  const std::string json = R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 11, "ts": 10, "dur": 50},
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#4", "pid": 1, "tid": 11, "ts": 60, "dur": 40},
    {"ph": "X", "cat": "cpu_op", "name": "bad\q escape in an operator's name", "pid": 1, "tid": 11, "ts": 20, "dur": 1},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#Adam.step", "pid": 1, "tid": 11, "ts": 30, "dur": 5}
  ]})json";
  const Trace t = import_kineto_bytes(json, "steps.json");
  ASSERT_EQ(t.ranges.size(), 2u) << "the steps, not the other annotations";
  EXPECT_EQ(t.str(t.ranges[0].name), "ProfilerStep#3");
  EXPECT_EQ(t.ranges[0].start_ns, 10'000u);
  EXPECT_EQ(t.ranges[0].end_ns, 60'000u);
  EXPECT_EQ(t.ranges[1].tid, t.ranges[0].tid);
}

// A step's wait for data is a straggler's usual cause: the DataLoader's own
// range and a program's record_function that says so are kept, other
// annotations are not.
TEST(KinetoImport, RangesThatWaitForDataAreKept) {
  const std::string json = R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 11, "ts": 10, "dur": 90},
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 11, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "user_annotation", "name": "data_loading", "pid": 1, "tid": 11, "ts": 20, "dur": 7},
    {"ph": "X", "cat": "user_annotation", "name": "Load Batch", "pid": 1, "tid": 11, "ts": 30, "dur": 3},
    {"ph": "X", "cat": "user_annotation", "name": "loading_weights", "pid": 1, "tid": 11, "ts": 40, "dur": 3},
    {"ph": "X", "cat": "user_annotation", "name": "data_loading_and_a_name_too_long_to_be_one", "pid": 1, "tid": 11, "ts": 50, "dur": 3}
  ]})json";
  const Trace t = import_kineto_bytes(json, "data.json");
  std::vector<std::string> kept;
  for (const Range& r : t.ranges) kept.emplace_back(t.str(r.name));
  EXPECT_EQ(kept, (std::vector<std::string>{"ProfilerStep#3", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                            "data_loading", "Load Batch"}));
}

// Microseconds since the epoch with nanosecond decimals, as PyTorch writes
// them in several set-ups: 19 significant digits, more than a double holds
// (its step there is 0.25 us), read exactly or not at all.
TEST(KinetoImport, EpochTimestampsWithNanosecondDecimalsAreExact) {
  const std::string json = R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1712195495505582.988, "dur": 5, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1712195495605582.989, "dur": 5.001, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": "1712195495605590.5", "dur": "1e0", "args": {"device": 0, "stream": 7}}
  ]})json";
  const Trace t = import_kineto_bytes(json, "epoch.json");
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.kernels[0].start_ns, 1712195495505582988u);
  EXPECT_EQ(t.kernels[1].start_ns, 1712195495605582989u);
  EXPECT_EQ(t.kernels[1].end_ns - t.kernels[1].start_ns, 5001u);
  EXPECT_EQ(t.kernels[2].start_ns, 1712195495605590500u) << "quoted numbers are read exactly too";
  EXPECT_EQ(t.kernels[2].end_ns - t.kernels[2].start_ns, 1000u);
  EXPECT_EQ(t.end_ns() - t.begin_ns(), 100'008'512u) << "100 ms apart, not lost";
}

TEST(KinetoImport, DecimalMicrosecondsRoundToTheNearestNanosecond) {
  using import::kineto_json::decimal_micros_to_ns;
  EXPECT_EQ(decimal_micros_to_ns("12"), 12'000u);
  EXPECT_EQ(decimal_micros_to_ns(" 12.25"), 12'250u);
  EXPECT_EQ(decimal_micros_to_ns("0.0004"), 0u);
  EXPECT_EQ(decimal_micros_to_ns("0.0005"), 1u);
  EXPECT_EQ(decimal_micros_to_ns("1.5e3"), 1'500'000u);
  EXPECT_EQ(decimal_micros_to_ns("15E-1"), 1'500u);
  EXPECT_EQ(decimal_micros_to_ns("1712195495505582.98849999999999"), 1712195495505582988u);
  EXPECT_EQ(decimal_micros_to_ns("1712195495505582.9885"), 1712195495505582989u);
  EXPECT_EQ(decimal_micros_to_ns("0"), 0u);
  EXPECT_FALSE(decimal_micros_to_ns("-3"));
  EXPECT_FALSE(decimal_micros_to_ns("."));
  EXPECT_FALSE(decimal_micros_to_ns("1e"));
  EXPECT_FALSE(decimal_micros_to_ns("1e400"));
  EXPECT_FALSE(decimal_micros_to_ns("99999999999999999999999999999999999999999"));
}

TEST(KinetoImport, BareArrayIsAcceptedAsChromeTrace) {
  const Trace t = import_kineto_bytes(R"([{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 1, "args": {}}])", "a.json");
  EXPECT_EQ(t.kernels.size(), 1u);
}

TEST(KinetoImport, BadInputIsAClearError) {
  auto message = [](const std::string& bytes) {
    try {
      import_kineto_bytes(bytes, "in.json");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"({"name": "a package.json"})").find("not a Chrome/Kineto trace"), std::string::npos);
  EXPECT_NE(message(R"({"traceEvents": 3})").find("not a Chrome/Kineto trace"), std::string::npos);
  EXPECT_NE(message("42").find("not a Chrome/Kineto trace"), std::string::npos);
  EXPECT_NE(message(std::string("\x1f\x8b\x08\x00garbage", 12)).find("gzip"), std::string::npos);
  // Wrong types inside events are skipped, not fatal.
  const Trace t = import_kineto_bytes(R"({"traceEvents": [1, "x", {"ph": "X", "cat": "kernel", "ts": "soon", "dur": -4, "args": {"grid": "big"}}]})", "odd.json");
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].start_ns, 0u);
}

std::string gzip(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip wrapper
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(KinetoImport, GzipInOneOrSeveralMembersAndCutShort) {
  const std::string head = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k1", "ts": 1, "dur": 1},)";
  const std::string tail = R"( {"ph": "X", "cat": "kernel", "name": "k2", "ts": 2, "dur": 1}]})";
  EXPECT_EQ(import_kineto_bytes(gzip(head + tail), "one.json.gz").kernels.size(), 2u);
  // Concatenated members (as `cat a.gz b.gz` makes) are one gzip stream.
  const std::string two = gzip(head) + gzip(tail);
  EXPECT_EQ(import_kineto_bytes(two, "two.json.gz").kernels.size(), 2u);
  const std::string whole = gzip(head + tail);
  try {
    import_kineto_bytes(whole.substr(0, whole.size() - 9), "cut.json.gz");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("gzip data is corrupt or cut short"), std::string::npos) << e.what();
  }
}

TEST(KinetoImport, QuotedNumbersAreReadAndWordsAreZero) {
  // Older traces quote numbers and put words ("stream 7") where a tid goes;
  // a huge quoted value is out of range and counts as absent.
  const Trace t = import_kineto_bytes(R"({"traceEvents": [
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "ts": "2.5", "dur": 1, "tid": "stream 7", "args": {"correlation": " 12"}},
    {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "ts": 3, "dur": 1, "tid": "41", "args": {"correlation": "1e999"}},
    {"ph": "X", "cat": "Kernel", "name": "k", "ts": 4, "dur": 1, "args": {"device": "1x", "stream": "7", "grid": ["2", 3, "z"]}},
    {"ph": "X", "cat": "Kernel", "name": "k2", "ts": 5, "dur": 1, "args": 7}]})", "quoted.json");
  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.api_calls[0].start_ns, 2500u);
  EXPECT_EQ(t.api_calls[0].tid, 0u);
  EXPECT_EQ(t.api_calls[0].correlation, 12u);
  EXPECT_EQ(t.api_calls[1].tid, 41u);
  EXPECT_EQ(t.api_calls[1].correlation, 0u);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].device, 1);  // numeric prefix, as strtod reads it
  EXPECT_EQ(t.kernels[0].stream, 7u);
  EXPECT_EQ(t.kernels[0].grid[0], 2u);
  EXPECT_EQ(t.kernels[0].grid[1], 3u);
  EXPECT_EQ(t.kernels[0].grid[2], 0u);
  // "args" that is not an object: the kernel is kept with default fields.
  EXPECT_EQ(t.kernels[1].device, kHostDevice);
  EXPECT_EQ(t.kernels[1].stream, 0u);
}

TEST(LoadTrace, UnknownFormatsAreClearErrors) {
  const std::string text = test::temp_path("notes.txt");
  test::write_file(text, "hello");
  EXPECT_THROW(load_trace(text), TraceError);
  const std::string empty = test::temp_path("empty");
  test::write_file(empty, "");
  EXPECT_THROW(load_trace(empty), TraceError);
  EXPECT_THROW(load_trace("/nonexistent/trace.json"), TraceError);
}

}  // namespace
}  // namespace gpudiag
