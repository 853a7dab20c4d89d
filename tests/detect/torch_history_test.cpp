// From PyTorch's snapshot to GD004, through the real writer and reader: the
// startup hook's module (record/python/gpudiag_torch_history.py) writes the
// history of a snapshot beside a .gdtrace, as at the exit of a traced
// program, with the stand-in torch of tests/record/python_hook; load_trace
// reads it and the report names the tensor dropped while a side stream read
// it. The record_stream twin gives nothing.
#include <time.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "detect_support.h"
#include "gpudiag/import/allocator_history.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "python_with.h"
#include "scratch_dir.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;
using nlohmann::json;

std::uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

constexpr std::uint64_t kBlock = 0x7f2a00000000, kProduct = 0x7f2a00400000;
constexpr std::uint64_t kSideHandle = 0x55d1e0a0b0c0;

// side_stream.py: x made (line 43) and filled on the main stream, read by a
// kernel on the side stream (line 47) that runs 5 ms, dropped (line 50).
// With record_stream the allocator makes x's block free again only when it
// sees the side stream's event done, after the kernel.
struct Run {
  std::string trace_path, snapshot_path;
};

Run write_run(const std::string& name, bool record_stream) {
  // Times on the trace's clock, a second ago: the history's are PyTorch's
  // realtime microseconds for the same moments.
  const std::uint64_t t0 = clock_ns(CLOCK_MONOTONIC) - 1'000'000'000;
  const std::int64_t realtime_ahead =
      static_cast<std::int64_t>(clock_ns(CLOCK_REALTIME)) - static_cast<std::int64_t>(clock_ns(CLOCK_MONOTONIC));
  const auto us = [&](std::uint64_t at) { return (static_cast<std::int64_t>(t0 + at) + realtime_ahead) / 1000; };

  Trace t;
  t.source = TraceSource::Gdtrace;
  t.streams.push_back({.device = 0, .id = 7, .handle = 0, .handle_known = true});
  t.streams.push_back({.device = 0, .id = 14, .handle = kSideHandle, .handle_known = true});
  const auto launch = [&](std::uint64_t id, std::uint64_t at, std::uint64_t end, const char* name, std::uint64_t stream,
                          std::vector<std::uint64_t> args) {
    t.api_calls.push_back({.start_ns = t0 + at, .end_ns = t0 + at + 2'000, .name = t.intern("cudaLaunchKernel"),
                           .domain = ApiDomain::Runtime, .device = 0, .correlation = id, .symbol = t.intern(name)});
    for (std::uint32_t i = 0; i < args.size(); ++i)
      t.kernel_args.push_back({.time_ns = t0 + at, .value = args[i], .index = 2, .memory = MemKind::Device,
                               .device = 0, .stream = stream, .correlation = id});
    kernel(t, t0 + at + 3'000, t0 + end, name, 0, stream, id);
  };
  alloc(t, t0, kBlock, 20ull << 20, 0);  // the allocator's segment
  launch(1, 100'000, 110'000, "fill", 7, {kBlock});
  launch(2, 200'000, 5'200'000, "mul", 14, {kProduct, kBlock});
  launch(3, 310'000, 320'000, "fill", 7, {record_stream ? kBlock + (4 << 20) : kBlock});
  if (record_stream)  // the allocator's query of the side stream's event, done
    t.api_calls.push_back({.start_ns = t0 + 5'300'000, .end_ns = t0 + 5'301'000, .name = t.intern("cudaEventQuery"),
                           .domain = ApiDomain::Runtime});
  const std::string dir = test::scratch_dir(name);
  Run run{dir + "/trace.gdtrace", dir + "/snapshot.json"};
  write_gdtrace(t, run.trace_path);

  const auto frames = [](int line) {
    return json::array({{{"filename", "side_stream.py"}, {"line", line}, {"name", "main"}}});
  };
  const auto entry = [&](const char* action, std::uint64_t addr, std::uint64_t stream, std::uint64_t at, int line) {
    return json{{"action", action}, {"addr", addr},   {"size", 4 << 20},
                {"stream", stream}, {"time_us", us(at)}, {"frames", frames(line)}};
  };
  json device = json::array({entry("segment_alloc", kBlock, 0, 0, 43), entry("alloc", kBlock, 0, 90'000, 43),
                             entry("alloc", kProduct, kSideHandle, 190'000, 47),
                             entry("free_requested", kBlock, 0, 300'000, 50)});
  device.push_back(entry("free_completed", kBlock, 0, record_stream ? 5'400'000 : 300'000, 50));
  std::ofstream(run.snapshot_path) << json{{"segments", json::array()}, {"device_traces", {device}}}.dump();
  return run;
}

// The hook's module writes the history of the snapshot beside the trace.
void write_history(const std::string& python, const Run& run) {
  const std::string command = "PYTHONPATH='" GPUDIAG_PYTHON_HOOK_DIR ":" GPUDIAG_STUB_TORCH_DIR "' GPUDIAG_TRACE='" +
                              run.trace_path + "' STUB_SNAPSHOT='" + run.snapshot_path + "' " + python +
                              " -c 'import os, torch, gpudiag_torch_history as h; h._state[\"pid\"] = os.getpid(); "
                              "h._write_history()'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<Finding> premature_frees(bool record_stream) {
  const auto python = test::python_with("json");
  if (!python) return {};
  const Run run = write_run(record_stream ? "torch_history_fixed" : "torch_history_buggy", record_stream);
  write_history(*python, run);
  const Trace trace = load_trace(run.trace_path);
  EXPECT_TRUE(trace.allocator_history_note.empty()) << trace.allocator_history_note;
  EXPECT_EQ(trace.cached_blocks.size(), 2u);
  return only(detect(trace), "GD004");
}

TEST(TorchHistory, ATensorDroppedWhileASideStreamReadsItIsGD004FromWhatTheHookWrote) {
  if (!test::python_with("json")) GTEST_SKIP() << "no python3";
  const auto f = premature_frees(false);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("PyTorch's caching allocator made its memory free again for stream 7 while kernel mul, "
                              "given it as parameter 2 on stream 14, was still running"),
            std::string::npos)
      << f[0].message;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].file, "side_stream.py");
  EXPECT_EQ(f[0].stack[0].line, 50u);
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[1].stack.at(0).line, 43u);
  EXPECT_TRUE(premature_frees(true).empty()) << "record_stream";
}

}  // namespace
}  // namespace gpudiag
