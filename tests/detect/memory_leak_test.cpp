// Positive and negative traces for GD007..GD011.
#include <gtest/gtest.h>

#include "detect_support.h"
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

TEST(OutOfMemory, ReportsLiveMemoryByStackAndCapacity) {
  Trace t;
  alloc(t, 10, 0x1000, 6u << 20, 0, stack_named(t, "weights"));
  alloc(t, 20, 0x800000, 2u << 20, 0, stack_named(t, "activations"));
  t.memory_counters.push_back({.time_ns = 25, .device = 0, .allocated_bytes = 8u << 20, .reserved_bytes = 9u << 20});
  t.ooms.push_back({.time_ns = 30, .requested_bytes = 4u << 20, .free_bytes = 0, .capacity_bytes = 10u << 20,
                    .device = 0, .stack = stack_named(t, "forward")});
  const auto f = only(detect(t), "GD008");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("request for 4.00 MiB failed with 8.00 MiB live of 10.0 MiB capacity"),
            std::string::npos)
      << f[0].message;
  ASSERT_GE(f[0].notes.size(), 3u);
  EXPECT_NE(f[0].notes[0].message.find("1.00 MiB reserved but not allocated"), std::string::npos);
  EXPECT_EQ(f[0].notes[1].stack.at(0).function, "weights");  // the largest holder first
  Trace none;
  alloc(none, 10, 0x1000, 64, 0);
  EXPECT_TRUE(only(detect(none), "GD008").empty());
}

TEST(PageableAsyncCopy, AsyncCopiesFromPageableMemoryAreReported) {
  Trace t;
  for (int i = 0; i < 3; ++i) t.memcpys.push_back(copy(100 * i, 100 * i + 50, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.memcpys.push_back(copy(1000, 1050, CopyKind::HtoD, 1 << 20, true, MemKind::Pinned));     // pinned: fine
  t.memcpys.push_back(copy(2000, 2050, CopyKind::DtoH, 1 << 20, false, MemKind::Pageable));  // sync copy: fine
  const auto f = only(detect(t), "GD009");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.rfind("3 asynchronous HtoD copies (3.00 MiB", 0), 0u) << f[0].message;
}

TEST(SyncInLoop, ShareOfTheLoopBlockedInSyncs) {
  Trace t = training_loop(10, 800'000);
  for (Sync& s : t.syncs) s.stack = stack_named(t, "loss_item");
  const auto f = only(detect(t), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("in the training loop (80.0%)"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "loss_item");
  DetectOptions lenient;
  lenient.sync_share = 0.9;
  EXPECT_TRUE(only(detect(t, lenient), "GD010").empty()) << "one sync per iteration, under the share";
}

// A data loader worker whose blocking copy waits for the device stalls
// itself; the thread that launches the step's work is what a sync holds up.
TEST(SyncInLoop, OnlySyncsOfTheThreadsThatLaunchTheLoopsWorkCount) {
  Trace t = training_loop(10, 800'000);
  for (const Kernel& k : std::vector<Kernel>(t.kernels))
    t.api_calls.push_back({.start_ns = k.start_ns - 1, .end_ns = k.start_ns, .name = t.intern("cudaLaunchKernel"),
                           .tid = 1});
  for (Sync& s : t.syncs) {
    s.tid = 2;
    t.api_calls.push_back({.start_ns = s.start_ns, .end_ns = s.end_ns, .name = t.intern("cudaMemcpy"), .tid = 2});
  }
  EXPECT_EQ(only(detect(t), "GD010").size(), 1u) << "no sync is on a launching thread: the trace may number them apart";
  t.syncs.push_back({.start_ns = 1, .end_ns = 2, .kind = SyncKind::Device, .tid = 1});
  EXPECT_TRUE(only(detect(t), "GD010").empty()) << "the syncs are a worker's";
  for (Sync& s : t.syncs) s.tid = 1;
  EXPECT_EQ(only(detect(t), "GD010").size(), 1u) << "the syncs are the launching thread's";
}

TEST(SyncInLoop, SyncsOfAProgramWithoutALoopAreNoSyncInALoop) {
  Trace t;
  for (int i = 0; i < 20; ++i) {
    kernel(t, 1000 * i, 1000 * i + 900, "spin");
    t.syncs.push_back({.start_ns = 1000u * i + 100, .end_ns = 1000u * i + 900, .kind = SyncKind::Device});
  }
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

TEST(LaunchBound, TinyKernelsLongGapsAndCopiesDominating) {
  Trace t;
  for (int i = 0; i < 40; ++i) {
    kernel(t, 100'000u * i, 100'000u * i + 5'000, "tiny", 0, 7, i + 1);
    t.api_calls.push_back({.start_ns = 100'000u * i, .end_ns = 100'000u * i + 8'000,
                           .name = t.intern("cudaLaunchKernel"), .correlation = static_cast<std::uint64_t>(i + 1)});
  }
  kernel(t, 2'000'000'000, 2'000'001'000, "after_a_gap");
  const auto f = only(detect(t), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("1 idle gap longer than 500.0 ms"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("ran shorter than 50.0 us"), std::string::npos);
  EXPECT_NE(f[0].message.find("less GPU time than the CPU spent launching them"), std::string::npos);
  EXPECT_NE(f[0].message.find("The GPU is launch-bound"), std::string::npos);
  EXPECT_EQ(f[0].message.find("faster on the CPU"), std::string::npos) << "no claim the trace has no evidence for";
}

TEST(LaunchBound, KernelsACpuDeviceRanAreNotAGpuWaiting) {
  Trace t;
  for (int i = 0; i < 40; ++i) kernel(t, 100'000u * i, 100'000u * i + 5'000, "cpu_conv", kHostDevice);
  kernel(t, 2'000'000'000, 2'000'001'000, "after_a_gap", kHostDevice);
  EXPECT_TRUE(only(detect(t), "GD011").empty()) << "the host is no GPU: " << only(detect(t), "GD011").front().message;
}

TEST(LaunchBound, ShortKernelsBesideLongOnesOnABusyGpuAreNoWaiting) {
  // A small model on a GPU that keeps up: each layer a 400 us convolution
  // and three 3 us element-wise kernels, 2 us apart. Three kernels in four
  // are short, but they are 2% of the kernel time and the GPU is busy 97%.
  Trace t;
  std::uint64_t at = 0, id = 0;
  for (int layer = 0; layer < 50; ++layer)
    for (std::uint64_t d : {400'000u, 3'000u, 3'000u, 3'000u}) {
      kernel(t, at, at + d, d > 50'000 ? "conv" : "bias_relu", 0, 7, ++id);
      t.api_calls.push_back({.start_ns = at, .end_ns = at + 5'000, .name = t.intern("cudaLaunchKernel"), .correlation = id});
      at += d + 2'000;
    }
  const auto f = only(detect(t), "GD011");
  EXPECT_TRUE(f.empty()) << f.front().message;
}

TEST(LaunchBound, ABusyGpuRunningOnlyShortKernelsIsLaunchBound) {
  // One image per step: every kernel 10 us, 8 us apart (busy 56%); the
  // GPU's whole time goes to kernels too small to be worth their launch.
  Trace t;
  for (int i = 0; i < 200; ++i) kernel(t, 18'000u * i, 18'000u * i + 10'000, "tiny_conv");
  const auto f = only(detect(t), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("100% of 200 kernels ran shorter than 50.0 us (100% of the kernel time)"), std::string::npos)
      << f[0].message;
}

TEST(LaunchBound, BusyGpuWithLongKernelsIsFine) {
  Trace t;
  for (int i = 0; i < 40; ++i) kernel(t, 1'000'000u * i, 1'000'000u * i + 990'000, "big_gemm");
  EXPECT_TRUE(only(detect(t), "GD011").empty());
}

}  // namespace
}  // namespace gpudiag
