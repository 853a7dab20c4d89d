// PyTorch's allocator history beside a .gdtrace (<trace>.torch-memory.json,
// written by record/python/gpudiag_torch_history.py): load_trace reads its
// blocks onto the trace's clock and streams, and a history it cannot use
// leaves the trace loading, saying why.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "gpudiag/import/allocator_history.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

using nlohmann::json;

// The realtime clock runs 1e18 ns ahead of the monotonic one here.
constexpr std::int64_t kRealtimeAhead = 1'000'000'000'000'000'000;
std::int64_t realtime_us(std::uint64_t monotonic_ns) {
  return (static_cast<std::int64_t>(monotonic_ns) + kRealtimeAhead) / 1000;
}

// A trace of 0..100 us: the main stream (handle 0) and a side stream
// (handle 0x5555aaaa) named by their launches, id 7 and 14.
std::string write_trace(const std::string& name) {
  Trace t;
  t.streams.push_back({.device = 0, .id = 7, .handle = 0, .handle_known = true});
  t.streams.push_back({.device = 0, .id = 14, .handle = 0x5555aaaa, .handle_known = true});
  t.streams.push_back({.device = 0, .id = 21});  // named by the program: no handle
  t.kernels.push_back({.start_ns = 1'000, .end_ns = 2'000, .name = t.intern("k"), .device = 0, .stream = 7});
  t.kernels.push_back({.start_ns = 99'000, .end_ns = 100'000, .name = t.intern("k"), .device = 0, .stream = 14});
  const std::string path = test::temp_path(name);
  write_gdtrace(t, path);
  return path;
}

// An entry whose stack is step() at train.py:`line`, called from main() at line 90.
json entry(const char* action, std::uint64_t addr, std::uint64_t size, std::uint64_t stream, std::uint64_t at_ns,
           int line) {
  return {{"action", action}, {"addr", addr},   {"size", size},
          {"stream", stream}, {"time_us", realtime_us(at_ns)}, {"stack", line}};
}

json history(json device0) {
  // Frame 0 is main() at line 90, frame n step() at line n; stack n is frames n and 0.
  json frames = json::array({json::array({"train.py", 90, "main"})});
  json stacks = json::array({json::array()});
  for (int line = 1; line < 20; ++line) {
    frames.push_back(json::array({"train.py", line, "step"}));
    stacks.push_back(json::array({line, 0}));
  }
  return {{"format", "gpudiag-torch-memory"},
          {"version", 1},
          {"pid", 42},
          {"clock", {{"realtime_ns", kRealtimeAhead + 500'000}, {"monotonic_ns", 500'000}}},
          {"frames", frames},
          {"stacks", stacks},
          {"device_traces", json::array({std::move(device0)})}};
}

TEST(AllocatorHistory, BlocksComeOnTheTracesClockAndStreams) {
  const std::string path = write_trace("history.gdtrace");
  test::write_file(import::allocator_history_path(path),
                   history(json::array({entry("segment_alloc", 0x7000000, 2 << 20, 0, 5'000, 1),
                                        entry("alloc", 0x7000000, 4096, 0, 10'000, 11),
                                        entry("alloc", 0x7001000, 512, 0x5555aaaa, 11'000, 12),
                                        entry("free_requested", 0x7000000, 4096, 0, 20'000, 13),
                                        entry("free_completed", 0x7000000, 4096, 0, 20'000, 13),
                                        entry("free_requested", 0x7001000, 512, 0x5555aaaa, 30'000, 14),
                                        entry("free_completed", 0x7001000, 512, 0x5555aaaa, 60'000, 15),
                                        entry("alloc", 0x7000000, 4096, 0x1234, 70'000, 16),
                                        entry("free_completed", 0x7fff000, 64, 0, 71'000, 17)}))
                       .dump());
  const Trace t = load_trace(path);
  EXPECT_TRUE(t.allocator_history_note.empty()) << t.allocator_history_note;
  ASSERT_EQ(t.cached_blocks.size(), 3u) << "a segment is no block; a free of a block before the history is nothing";
  const CachedBlock& x = t.cached_blocks[0];
  EXPECT_EQ(x.addr, 0x7000000u);
  EXPECT_EQ(x.bytes, 4096u);
  EXPECT_TRUE(x.stream_known);
  EXPECT_EQ(x.stream, 7u);
  EXPECT_EQ(x.alloc_ns, 10'000u);
  EXPECT_EQ(x.free_requested_ns, 20'000u);
  EXPECT_EQ(x.free_ns, 20'000u);
  ASSERT_EQ(t.stack(x.stack).frames.size(), 2u);
  EXPECT_EQ(t.str(t.stack(x.stack).frames[0].function), "step");
  EXPECT_EQ(t.str(t.stack(x.stack).frames[0].file), "train.py");
  EXPECT_EQ(t.stack(x.stack).frames[0].line, 11u);
  EXPECT_EQ(t.stack(x.free_stack).frames[0].line, 13u);
  const CachedBlock& side = t.cached_blocks[1];
  EXPECT_EQ(side.stream, 14u);
  EXPECT_EQ(side.free_requested_ns, 30'000u);
  EXPECT_EQ(side.free_ns, 60'000u) << "free again only when the allocator saw the other streams done";
  EXPECT_EQ(t.stack(side.free_stack).frames[0].line, 14u) << "dropped where the program dropped it";
  const CachedBlock& unknown = t.cached_blocks[2];
  EXPECT_FALSE(unknown.stream_known) << "no launch named handle 0x1234";
  EXPECT_EQ(unknown.free_ns, CachedBlock::kNever);
  std::filesystem::remove(path);
  std::filesystem::remove(import::allocator_history_path(path));
}

TEST(AllocatorHistory, ATraceWithoutAHistoryHasNoBlocks) {
  const std::string path = write_trace("no_history.gdtrace");
  const Trace t = load_trace(path);
  EXPECT_TRUE(t.cached_blocks.empty());
  EXPECT_TRUE(t.allocator_history_note.empty());
  std::filesystem::remove(path);
}

TEST(AllocatorHistory, AnUnusableHistoryLeavesTheTraceLoadingAndSaysWhy) {
  const std::string path = write_trace("bad_history.gdtrace");
  const std::string beside = import::allocator_history_path(path);
  const json good = history(json::array({entry("alloc", 0x7000000, 4096, 0, 10'000, 11)}));
  json wrong_format = good;
  wrong_format["format"] = "something else";
  json no_clock = good;
  no_clock.erase("clock");
  json bad_entry = good;
  bad_entry["device_traces"][0][0]["addr"] = "0x7000000";
  json far_future = good;
  far_future["device_traces"][0][0]["time_us"] = std::numeric_limits<std::int64_t>::max();
  json no_clock_values = good;
  no_clock_values["clock"]["realtime_ns"] = std::numeric_limits<std::int64_t>::min();
  json bad_stack = good;
  bad_stack["device_traces"][0][0]["stack"] = 99;
  json other_clock = good;  // its times two seconds past the end of the recording
  other_clock["clock"]["monotonic_ns"] = 2'000'500'000;
  const std::vector<std::pair<const char*, std::string>> histories = {
      {"garbage", "\x1f\x8b not json at all"},
      {"truncated", good.dump().substr(0, good.dump().size() / 2)},
      {"empty", ""},
      {"another format", wrong_format.dump()},
      {"no clock", no_clock.dump()},
      {"an address as a string", bad_entry.dump()},
      {"a stack not in its table", bad_stack.dump()},
      {"a time past any clock", far_future.dump()},
      {"clocks that are no times", no_clock_values.dump()},
      {"another clock", other_clock.dump()},
  };
  for (const auto& [what, text] : histories) {
    SCOPED_TRACE(what);
    test::write_file(beside, text);
    Trace t;
    ASSERT_NO_THROW(t = load_trace(path));
    EXPECT_EQ(t.kernels.size(), 2u);
    EXPECT_TRUE(t.cached_blocks.empty());
    EXPECT_NE(t.allocator_history_note.find(beside), std::string::npos) << t.allocator_history_note;
  }
  std::filesystem::remove(path);
  std::filesystem::remove(beside);
}

TEST(AllocatorHistory, AGzippedTracesHistoryIsTheOneWrittenBesideItBeforeCompression) {
  EXPECT_EQ(import::allocator_history_path("runs/a.gdtrace"), "runs/a.gdtrace.torch-memory.json");
  EXPECT_EQ(import::allocator_history_path("runs/a.gdtrace.gz"), "runs/a.gdtrace.torch-memory.json");
}

}  // namespace
}  // namespace gpudiag
