// GD007 memory-leak: memory still live at exit, grouped by stack, and what
// is held until exit on purpose or could not be freed; a bounded trace's
// leak that grew before its detail.
#include <filesystem>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(MemoryLeak, LiveAtExitIsGroupedByStack) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  const StackId cache = stack_named(t, "build_cache");
  for (int i = 0; i < 4; ++i) alloc(t, 10 + i, 0x1000 + 0x100 * i, 64, 0, cache);
  alloc(t, 20, 0x9000, 8, 0, stack_named(t, "temp"));
  free_at(t, 30, 0x9000);
  const auto f = only(detect(t), "GD007");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.rfind("256 B in 4 allocations", 0), 0u) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "build_cache");
}

TEST(MemoryLeak, ProfilerWindowsAndFreedMemoryAreNotLeaks) {
  Trace t;
  t.source = TraceSource::Kineto;  // the window ends while the program still holds memory
  alloc(t, 10, 0x1000, 64, 0);
  EXPECT_TRUE(only(detect(t), "GD007").empty());
  Trace u;
  u.source = TraceSource::Gdtrace;
  alloc(u, 10, 0x1000, 64, 0);
  free_at(u, 20, 0x1000);
  EXPECT_TRUE(only(detect(u), "GD007").empty());
}

// A process that died of a signal never reached its frees: what it held is
// not a leak, and the crash is what the report must be about.
TEST(MemoryLeak, MemoryAProcessHeldWhenItCrashedIsNoLeak) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  alloc(t, 10, 0x1000, 64, 0);
  t.crashes.push_back({.time_ns = 20, .signal = 11});
  EXPECT_TRUE(only(detect(t), "GD007").empty());
}

// After a sticky kernel error every call fails, the frees too: what the
// program still held is no leak of its own.
TEST(MemoryLeak, MemoryHeldWhenAStickyKernelErrorEndedTheContextIsNoLeak) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  alloc(t, 10, 0x1000, 64, 0);
  t.api_calls.push_back({.start_ns = 20, .end_ns = 21, .name = t.intern("cudaDeviceSynchronize"), .status = 700});
  EXPECT_TRUE(only(detect(t), "GD007").empty());
  t.api_calls.back().status = 1;  // invalid argument: the context lives on, and so does the leak
  EXPECT_EQ(only(detect(t), "GD007").size(), 1u);
}

// PyTorch's caching allocator keeps its segments until exit: no leak, known
// by its frames, by its module when it has no symbols, or by its history.
// So is a library handle's memory.
TEST(MemoryLeak, ACachingAllocatorsSegmentsAndLibraryHandlesHeldUntilExitAreNoLeak) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  alloc(t, 10, 0x100000, 2 << 20, 0,
        stack_named(t, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(...)"));
  Stack in_c10;
  StackFrame f;
  f.ip = 0x7000'0000'1000;
  f.module = static_cast<std::int32_t>(t.modules.size());
  in_c10.frames.push_back(f);
  t.modules.push_back({.path = t.intern("/opt/torch/lib/libc10_cuda.so")});
  alloc(t, 11, 0x400000, 2 << 20, 0, t.add_stack(std::move(in_c10)));
  alloc(t, 12, 0x800000, 2 << 20, 0);  // stacks off: PyTorch's history names a block in it
  t.cached_blocks.push_back({.device = 0, .addr = 0x800000, .bytes = 512});
  // A cuDNN handle PyTorch keeps for the life of the process.
  alloc(t, 14, 0xa00000, 25'344, 0, stack_named(t, "at::native::(anonymous namespace)::createCuDNNHandle(cudnnContext**)"));
  EXPECT_TRUE(only(detect(t), "GD007").empty());
  alloc(t, 13, 0xc00000, 64, 0, stack_named(t, "main"));
  const auto leaks = only(detect(t), "GD007");
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(leaks[0].message.rfind("64 B in 1 allocation", 0), 0u) << leaks[0].message;
}

// 12000 1 ms steps after weights made once: each step's activations are
// freed within it, and from step `keep_from` on each step keeps 256 B of
// logits (`keep_from` past the end: none).
Trace long_loop_keeping_logits_from(int keep_from) {
  constexpr int kSteps = 12000;
  Trace t = training_loop(kSteps, 0, 1'000'000);
  alloc(t, 1000, 0x10000000, 64u << 20, 0, stack_named(t, "init_weights", "train.cpp", 10));
  const StackId forward = stack_named(t, "forward", "train.cpp", 20), keep = stack_named(t, "keep_logits", "train.cpp", 30);
  for (int s = 0; s < kSteps; ++s) {
    const std::uint64_t base = 1'000'000 + 1'000'000ull * s;
    alloc(t, base + 100'000, 0x40000000, 256u << 10, 0, forward);
    free_at(t, base + 900'000, 0x40000000);
    if (s >= keep_from) alloc(t, base + 950'000, 0x80000000 + 256ull * s, 256, 0, keep);
  }
  t.sort_by_time();
  return t;
}

// The same run bounded at its smallest bound: the detail's last steps are
// too few for their growth to be a leak's (under 1 MiB), and the dropped
// part kept the logits still held, allocated all through it.
std::vector<Finding> leaks_when_bounded(const Trace& run) {
  const std::filesystem::path dir = test::temp_path("bounded-leak");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.gdtrace").string();
  write_gdtrace(run, path, 1u << 20);
  const Trace bounded = read_gdtrace(path);
  EXPECT_TRUE(bounded.bounded());
  std::vector<Finding> leaks;
  for (const Finding& f : analyze(bounded).findings)
    if (f.rule_id == "GD007") leaks.push_back(f);
  return leaks;
}

TEST(MemoryLeak, ABoundedTraceFindsALeakThatGrewInThePartItDropped) {
  const Trace run = long_loop_keeping_logits_from(1000);
  const auto whole = only(detect(run), "GD007");
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_NE(whole[0].message.find("grew by 2.69 MiB over 11998 iterations"), std::string::npos) << whole[0].message;
  const auto leaks = leaks_when_bounded(run);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_NE(leaks[0].message.find("allocated here and still held when the trace's detail begins grew by"),
            std::string::npos)
      << leaks[0].message;
  ASSERT_FALSE(leaks[0].stack.empty());
  EXPECT_EQ(leaks[0].stack[0].address, 0x1000u + 30) << "keep_logits's frame (a .gdtrace keeps addresses)";
}

TEST(MemoryLeak, ABoundedTraceOfAHealthyLoopHasNoLeak) {
  EXPECT_TRUE(leaks_when_bounded(long_loop_keeping_logits_from(12000)).empty());
}

}  // namespace
}  // namespace gpudiag
