// Chrome trace export: valid JSON, a process per device and a track per
// stream, counters of live memory that follow allocations and frees.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpudiag/trace_io.h"
#include "gpudiag/export/chrome_trace.h"
#include "gpudiag/import/load_trace.h"

namespace gpudiag {
namespace {

using nlohmann::json;

json export_json(const Trace& t) {
  std::ostringstream out;
  write_chrome_trace(t, out);
  return json::parse(out.str());  // throws (fails the test) if not valid JSON
}

Trace two_device_trace() {
  Trace t;
  t.pid = 9;
  t.devices.push_back({0, t.intern("GPU-A"), 0});
  t.kernels.push_back({.start_ns = 1000, .end_ns = 3000, .name = t.intern("k\"<img src=x onerror=alert(1)>\n"), .device = 0, .stream = 7});
  t.kernels.push_back({.start_ns = 2000, .end_ns = 2500, .name = t.intern("other"), .device = 1, .stream = 3});
  t.memcpys.push_back({.start_ns = 500, .end_ns = 900, .bytes = 64, .copy = CopyKind::HtoD, .src_kind = MemKind::Pageable,
                       .dst_kind = MemKind::Device, .device = 0, .stream = 7});
  t.api_calls.push_back({.start_ns = 400, .end_ns = 450, .name = t.intern("cudaMemcpy"), .tid = 42});
  t.allocs.push_back({.time_ns = 100, .addr = 0x10, .bytes = 1000, .kind = MemKind::Device, .device = 0});
  t.allocs.push_back({.time_ns = 200, .addr = 0x20, .bytes = 500, .kind = MemKind::Device, .device = 0});
  t.frees.push_back({.time_ns = 300, .addr = 0x10, .bytes = 0, .device = 0});  // size from the allocation
  return t;
}

TEST(ChromeExport, TracksPerDeviceAndStream) {
  const json doc = export_json(two_device_trace());
  std::set<std::string> processes;
  std::set<std::pair<int, std::uint64_t>> threads;
  std::size_t complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert({e["pid"].get<int>(), e["tid"].get<std::uint64_t>()});
    if (e["ph"] == "X") ++complete;
  }
  EXPECT_TRUE(processes.count("GPU 0 GPU-A"));
  EXPECT_TRUE(processes.count("GPU 1"));
  EXPECT_TRUE(processes.count("host (pid 9)"));
  EXPECT_EQ(threads.size(), 2u) << "stream 7 on GPU 0, stream 3 on GPU 1";
  EXPECT_EQ(complete, 4u) << "two kernels, a copy, an API call";
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
}

TEST(ChromeExport, TimesAreMicrosecondsFromTheTraceStart) {
  const json doc = export_json(two_device_trace());
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "other") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.9);  // 2000 ns - origin 100 ns
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.5);
    }
}

TEST(ChromeExport, LiveMemoryCounterFollowsAllocationsAndFrees) {
  const json doc = export_json(two_device_trace());
  std::vector<std::int64_t> live;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "live memory") live.push_back(e["args"]["bytes"].get<std::int64_t>());
  EXPECT_EQ(live, (std::vector<std::int64_t>{1000, 1500, 500}));
}

// A trace's ids and sizes are whatever it says: the largest device id gets
// its own process, and live memory past 2^64 bytes stays at the top instead
// of wrapping (or going negative and being shown as none).
TEST(ChromeExport, ExtremeDevicesAndSizesKeepTheirMeaning) {
  Trace t;
  const std::int32_t last = std::numeric_limits<std::int32_t>::max();
  t.devices.push_back({-3, t.intern("not a GPU"), 0});
  t.kernels.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("k"), .device = last, .stream = 1});
  t.allocs.push_back({.time_ns = 10, .addr = 0x10, .bytes = 1ull << 63, .device = 0});
  t.allocs.push_back({.time_ns = 20, .addr = 0x20, .bytes = 1ull << 63, .device = 0});
  t.frees.push_back({.time_ns = 30, .addr = 0x30, .bytes = 7, .device = 1});  // more than device 1 ever had
  std::set<std::string> processes;
  std::vector<std::uint64_t> live0, live1;
  std::int64_t kernel_pid = 0;
  const json doc = export_json(t);
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["name"] == "k") kernel_pid = e["pid"].get<std::int64_t>();
    if (e["ph"] == "C" && e["name"] == "live memory")
      (e["pid"] == 100 ? live0 : live1).push_back(e["args"]["bytes"].get<std::uint64_t>());
  }
  EXPECT_EQ(kernel_pid, 100 + std::int64_t{last});
  EXPECT_TRUE(processes.count("GPU " + std::to_string(last)));
  EXPECT_TRUE(processes.count("host"));
  EXPECT_FALSE(processes.count("GPU -3 not a GPU")) << "a device with a negative id would rename the host";
  EXPECT_EQ(live0, (std::vector<std::uint64_t>{1ull << 63, std::numeric_limits<std::uint64_t>::max()}));
  EXPECT_EQ(live1, (std::vector<std::uint64_t>{0}));
}

TEST(ChromeExport, HostileNamesStayInsideJsonStrings) {
  const json doc = export_json(two_device_trace());
  bool found = false;
  for (const auto& e : doc["traceEvents"])
    found |= e["ph"] == "X" && e["name"] == "k\"<img src=x onerror=alert(1)>\n";
  EXPECT_TRUE(found);
}

TEST(ChromeExport, RealTraceExportsAndKeepsEveryKernel) {
  const std::string path = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/h100-vit-falconsai.trace.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not present";
  const Trace t = load_trace(path);
  const json doc = export_json(t);
  std::size_t kernels = 0, allocator = 0;
  for (const auto& e : doc["traceEvents"]) {
    kernels += e["ph"] == "X" && e.value("cat", "") == "kernel";
    allocator += e["ph"] == "C" && e["name"] == "allocator";
  }
  EXPECT_EQ(kernels, t.kernels.size());
  EXPECT_EQ(allocator, t.memory_counters.size());
}

}  // namespace
}  // namespace gpudiag
