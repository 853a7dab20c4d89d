// An out-of-memory under `gpudiag trace -- python train.py`, explained in
// PyTorch's terms: the Python hook (record/python/gpudiag_torch_history.py,
// with the stand-in torch of tests/record/python_hook) writes the allocator's
// snapshot as the request fails, beside the trace, and load_and_analyze
// explains GD008 from it: the request, what was free of what capacity,
// what PyTorch had allocated and reserved but not allocated, the largest
// free block, who held the memory by Python line, and what to do.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpudiag/import/allocator_history.h"
#include "gpudiag/report/load_and_analyze.h"
#include "gpudiag/trace_io.h"
#include "python_with.h"
#include "scratch_dir.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;
using nlohmann::json;

constexpr std::uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr std::uint64_t kSegment1 = 0x7f0000000000, kSegment2 = 0x7f1000000000;

// The CUDA calls of the run: the allocator's two segments, then the
// cudaMalloc that found no memory (its retry after freeing its cache too).
std::string write_trace(const std::string& name, bool fails = true) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  t.devices.push_back({.id = 0, .name = t.intern("NVIDIA H100 80GB HBM3"), .memory_bytes = 80 * kGiB});
  alloc(t, 1'000, kSegment1, 2 * kGiB, 0);
  alloc(t, 2'000, kSegment2, 1 * kGiB, 0);
  call(t, 3'000, "cudaMalloc", fails ? 2 : 0);
  const std::string path = test::scratch_dir(name) + "/trace.gdtrace";
  write_gdtrace(t, path);
  return path;
}

json frames(const char* function, int line) {
  return json::array({{{"filename", "train.py"}, {"line", line}, {"name", function}},
                      {{"filename", "train.py"}, {"line", 90}, {"name", "main"}}});
}

// What torch.cuda.memory._snapshot() returns at the failure: activations of
// 1.4 GiB and 400 MiB of losses kept across steps live, 600 MiB free in
// each segment, and the history ending with the out-of-memory.
json snapshot_at_the_failure() {
  const auto block = [](const char* state, std::uint64_t size, json f) {
    return json{{"size", size}, {"requested_size", size}, {"state", state}, {"frames", std::move(f)}};
  };
  const auto segment = [](std::uint64_t addr, std::uint64_t total, json blocks) {
    return json{{"device", 0}, {"address", addr}, {"total_size", total}, {"stream", 0}, {"segment_type", "large"},
                {"blocks", std::move(blocks)}};
  };
  const auto entry = [](const char* action, std::uint64_t addr, std::uint64_t size, int time_us, json f) {
    return json{{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", time_us},
                {"frames", std::move(f)}};
  };
  json oom = entry("oom", 0, 1 * kGiB, 40, frames("forward", 40));
  oom["device_free"] = 100 * kMiB;
  return {{"segments",
           json::array({segment(kSegment1, 2 * kGiB,
                                json::array({block("active_allocated", 1400 * kMiB, frames("forward", 40)),
                                             block("inactive", 648 * kMiB, json::array())})),
                        segment(kSegment2, 1 * kGiB,
                                json::array({block("active_allocated", 400 * kMiB, frames("keep_losses", 55)),
                                             block("inactive", 624 * kMiB, json::array())}))})},
          {"device_traces",
           json::array({json::array({entry("segment_alloc", kSegment1, 2 * kGiB, 10, frames("forward", 40)),
                                     entry("alloc", kSegment1, 1400 * kMiB, 11, frames("forward", 40)),
                                     entry("segment_alloc", kSegment2, 1 * kGiB, 20, frames("keep_losses", 55)),
                                     entry("alloc", kSegment2, 400 * kMiB, 21, frames("keep_losses", 55)), oom})})}};
}

// The hook's observer, called as the allocator calls it, writes the snapshot beside the trace.
void fail_allocation_under_the_hook(const std::string& python, const std::string& trace) {
  const std::string snapshot = trace + ".stub-snapshot.json";
  std::ofstream(snapshot) << snapshot_at_the_failure().dump();
  const std::string command = "PYTHONPATH='" GPUDIAG_PYTHON_HOOK_DIR ":" GPUDIAG_STUB_TORCH_DIR "' GPUDIAG_TRACE='" +
                              trace + "' STUB_SNAPSHOT='" + snapshot + "' " + python +
                              " -c 'import os, torch, gpudiag_torch_history as h; h._state[\"pid\"] = os.getpid(); "
                              "h._on_out_of_memory(0, 1 << 30, 80 << 30, 100 << 20)' 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<Finding> out_of_memory(const Report& r) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings)
    if (f.rule_id == "GD008") out.push_back(f);
  return out;
}

bool has_note(const Finding& f, const std::string& text) {
  return std::any_of(f.notes.begin(), f.notes.end(), [&](const auto& n) { return n.message.find(text) != std::string::npos; });
}

TEST(OutOfMemorySnapshot, ExplainsTheFailureInPyTorchsTermsWithWhoHeldTheMemoryByPythonLine) {
  const auto python = test::python_with("pickle");
  if (!python) GTEST_SKIP() << "no python3";
  const std::string trace = write_trace("oom_snapshot");
  fail_allocation_under_the_hook(*python, trace);
  ASSERT_TRUE(std::filesystem::exists(import::out_of_memory_snapshot_path(trace)));

  const AnalysedTrace a = load_and_analyze(trace);
  const auto f = out_of_memory(a.report);
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("tried to allocate 1.00 GiB; the GPU has a total capacity of 80.0 GiB of which 100 MiB is free; "
                   "1.76 GiB is allocated by PyTorch (live tensors) and 1.24 GiB is reserved by PyTorch but "
                   "unallocated, whose largest free block is 648 MiB, too small for the request"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("76.9 GiB is in use outside PyTorch's allocator"), std::string::npos)
      << "80 GiB less what was free and what PyTorch held: " << m;
  EXPECT_NE(m.find("expandable_segments:True"), std::string::npos) << "the reserved memory would hold the request: " << m;
  EXPECT_NE(m.find("optimizer.zero_grad(set_to_none=True)"), std::string::npos) << m;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].function, "forward");
  EXPECT_EQ(f[0].stack[0].line, 40u);
  // Who held the rest, largest first, by Python line.
  std::vector<std::string> holders;
  for (const auto& n : f[0].notes)
    if (n.message.find("live in") != std::string::npos && !n.stack.empty())
      holders.push_back(n.stack[0].function + ":" + std::to_string(n.stack[0].line));
  EXPECT_EQ(holders, (std::vector<std::string>{"forward:40", "keep_losses:55"}));
  EXPECT_TRUE(has_note(f[0], "from PyTorch's allocator snapshot at the out-of-memory"));
  EXPECT_TRUE(has_note(f[0], "as the CUDA calls show it: out of memory on")) << "the trace's own view stays";
  EXPECT_TRUE(a.report.out_of_memory_snapshot_note.empty());
}

// A snapshot an earlier run left beside the trace's name is not this run's.
TEST(OutOfMemorySnapshot, OneBesideATraceWithNoFailureChangesNothing) {
  const auto python = test::python_with("pickle");
  if (!python) GTEST_SKIP() << "no python3";
  const std::string trace = write_trace("oom_snapshot_stale", false);
  fail_allocation_under_the_hook(*python, trace);
  EXPECT_TRUE(out_of_memory(load_and_analyze(trace).report).empty());
}

TEST(OutOfMemorySnapshot, WithoutOneTheCudaCallsAloneExplainIt) {
  const std::string trace = write_trace("oom_without_snapshot");
  const auto f = out_of_memory(load_and_analyze(trace).report);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("out of memory on"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].message.find("allocated by PyTorch"), std::string::npos) << f[0].message;
}

TEST(OutOfMemorySnapshot, AnUnreadableOneIsAWarningAndTheCudaCallsStillExplainIt) {
  for (const std::string& bytes : {std::string("not a pickle"), std::string("\x80\x04\x95", 3),
                                  std::string("\x80\x04\x8c\x02os\x8c\x06system\x93.", 16)}) {
    const std::string trace = write_trace("oom_garbage_snapshot");
    std::ofstream(import::out_of_memory_snapshot_path(trace), std::ios::binary) << bytes;
    const AnalysedTrace a = load_and_analyze(trace);
    EXPECT_FALSE(a.report.out_of_memory_snapshot_note.empty());
    const auto warnings = report_warnings(a.trace, a.report);
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const auto& w) { return w.id == "out-of-memory-snapshot"; }));
    const auto f = out_of_memory(a.report);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].message.find("out of memory on"), std::string::npos) << f[0].message;
  }
}

}  // namespace
}  // namespace gpudiag
