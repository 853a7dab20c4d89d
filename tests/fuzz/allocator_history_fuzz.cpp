// The allocator history read beside a trace: whatever its text, reading it
// into a trace of launches on two streams never crashes, and every finding
// then stands on the trace's events.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_targets.h"
#include "gpudiag/import/allocator_history.h"
#include "gpudiag/trace_io.h"
#include "report_properties.h"

namespace gpudiag::fuzz {
namespace {

constexpr std::uint64_t kSegment = 0x7f2a00000000, kBlock = kSegment, kOut = kSegment + (4 << 20);
constexpr std::uint64_t kSideHandle = 0x55d1e0a0b0c0;
constexpr std::uint64_t kStart = 1'000'000'000;  // the trace's clock; the history's clocks agree on it

// A segment of PyTorch's allocator, filled on the main stream (7) and read
// by a 5 ms kernel on a side stream (14).
Trace launches_on_two_streams() {
  Trace t;
  t.source = TraceSource::Gdtrace;
  t.streams.push_back({.device = 0, .id = 7, .handle = 0, .handle_known = true});
  t.streams.push_back({.device = 0, .id = 14, .handle = kSideHandle, .handle_known = true});
  t.allocs.push_back({.time_ns = kStart, .addr = kSegment, .bytes = 20 << 20, .kind = MemKind::Device, .device = 0});
  const auto launch = [&](std::uint64_t id, std::uint64_t at, std::uint64_t end, const char* name, std::uint64_t stream,
                          std::uint64_t arg) {
    t.api_calls.push_back({.start_ns = kStart + at, .end_ns = kStart + at + 2'000, .name = t.intern("cudaLaunchKernel"),
                           .domain = ApiDomain::Runtime, .device = 0, .correlation = id, .symbol = t.intern(name)});
    t.kernel_args.push_back({.time_ns = kStart + at, .value = arg, .index = 0, .memory = MemKind::Device, .device = 0,
                             .stream = stream, .correlation = id});
    t.kernels.push_back({.start_ns = kStart + at + 3'000, .end_ns = kStart + end, .name = t.intern(name), .device = 0,
                         .stream = stream, .correlation = id});
  };
  launch(1, 100'000, 110'000, "fill", 7, kBlock);
  launch(2, 200'000, 5'200'000, "mul", 14, kBlock);
  launch(3, 310'000, 320'000, "fill", 7, kBlock);
  t.sort_by_time();
  return t;
}

}  // namespace

int allocator_history(const std::uint8_t* data, std::size_t size) {
  static const Trace base = launches_on_two_streams();
  Trace t = base;
  import::read_allocator_history_text(t, std::string_view(reinterpret_cast<const char*>(data), size),
                                      "fuzz.torch-memory.json");
  require(finding_without_evidence(t, analyze(t)));
  return 0;
}

std::string allocator_history_seed() {
  using nlohmann::json;
  const auto entry = [](const char* action, std::uint64_t addr, std::uint64_t stream, std::uint64_t at, int stack) {
    return json{{"action", action}, {"addr", addr}, {"size", 4 << 20}, {"stream", stream},
                {"time_us", (kStart + at) / 1000}, {"stack", stack}};
  };
  // The block that the side stream reads is made free again at 300 us, while the kernel runs: GD004.
  const json device = json::array({entry("alloc", kBlock, 0, 90'000, 0), entry("alloc", kOut, kSideHandle, 190'000, 1),
                                   entry("free_requested", kBlock, 0, 300'000, 2),
                                   entry("free_completed", kBlock, 0, 300'000, 2)});
  return json{{"format", import::kAllocatorHistoryFormat},
              {"clock", {{"realtime_ns", kStart}, {"monotonic_ns", kStart}}},
              {"frames", json::array({json::array({"side_stream.py", 43, "main"}), json::array({"side_stream.py", 47, "main"}),
                                      json::array({"side_stream.py", 50, "main"})})},
              {"stacks", json::array({json::array({0}), json::array({1}), json::array({2})})},
              {"device_traces", json::array({device})}}
      .dump();
}

}  // namespace gpudiag::fuzz

#ifdef GPUDIAG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpudiag::fuzz::allocator_history(data, size);
}
#endif
