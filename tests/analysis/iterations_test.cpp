#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "detect_support.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/report/report.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// Launch calls for every kernel of a training_loop, far ahead of the GPU:
// kernel j of step s launched at 1 ms + s * 20 us + j us.
void launch_far_ahead(Trace& t) {
  std::uint64_t correlation = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const std::uint64_t step = i / 20, at = 1'000'000 + 20'000 * step + 1'000 * (i % 20);
    t.kernels[i].correlation = ++correlation;
    t.api_calls.push_back({.start_ns = at, .end_ns = at + 500, .name = t.intern("cudaLaunchKernel"),
                           .correlation = correlation});
  }
}

TEST(Iterations, TheRepeatingKernelSequenceMarksEachStep) {
  const auto it = detect_iterations(training_loop(6, 0));
  ASSERT_EQ(it.size(), 5u);  // the last, possibly partial, step is left out
  for (const Interval& i : it) EXPECT_EQ(i.length(), 1'000'000u);
}

// A metrics stream's kernels run beside the training stream's, falling in
// among them at a different place every step: the training stream alone
// still shows its loop.
TEST(Iterations, KernelsOfAnotherStreamInterleavedDifferentlyEachStepHideNoLoop) {
  Trace t = training_loop(8, 0);
  for (std::uint64_t s = 0; s < 8; ++s)
    for (std::uint64_t k = 0; k < 4 + s % 3; ++k) {
      const std::uint64_t at = 1'000'000 * s + 40'000 * ((5 * s + 3 * k) % 20) + 35'000;
      kernel(t, at, at + 2'000, "metric" + std::to_string((s + k) % 5), 0, 13);
    }
  t.sort_by_time();
  const auto it = detect_iterations(t);
  ASSERT_EQ(it.size(), 7u);
  EXPECT_EQ(it[1].begin, 1'000'000u);
}

TEST(Iterations, NoLoopNoIterations) {
  Trace t;
  for (int k = 0; k < 200; ++k) kernel(t, 1000ull * k, 1000ull * k + 10, "op" + std::to_string(k));
  EXPECT_TRUE(detect_iterations(t).empty());
  EXPECT_TRUE(detect_iterations(training_loop(2, 0)).empty());  // too few repetitions to call it a loop
}

TEST(SyncInLoop, ReportsTheSharePerIterationWhenTheLoopShows) {
  const auto f = only(detect(training_loop(6, 300'000)), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("the share of each iteration the host was blocked (5 iterations"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("median 30.0%"), std::string::npos) << f[0].message;
}

TEST(SyncInLoop, TheSyncsOfStartUpAreNotTheLoops) {
  Trace t = training_loop(10, 0, 50'000'000);
  // cuDNN autotuning: thousands of syncs before the first iteration.
  for (int i = 0; i < 1000; ++i)
    t.syncs.push_back({.start_ns = 1000ull + 40'000ull * i, .end_ns = 31'000ull + 40'000ull * i, .kind = SyncKind::Device});
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

TEST(SyncInLoop, OneSyncOutsideAnyLoopIsNoSyncInALoop) {
  Trace t;
  kernel(t, 0, 1000, "scale");
  t.syncs.push_back({.start_ns = 10, .end_ns = 1000, .kind = SyncKind::Device});
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

// The host queued the whole loop at once and waited once at its end, while
// the GPU ran every iteration: one sync is no sync in each iteration.
TEST(SyncInLoop, OneSyncAfterTheWholeLoopIsNoSyncInEachIteration) {
  Trace t = training_loop(25, 0, 1'000'000);
  t.syncs.push_back({.start_ns = 1'200'000, .end_ns = 25'900'000, .kind = SyncKind::Stream, .device = 0, .stream = 7});
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

// A sync after each of 8 layers, each waiting only 1 us (a profiler makes the host the bottleneck).
Trace eight_syncs_per_step(SyncKind kind) {
  Trace t = training_loop(8, 0, 1'000'000);
  for (int s = 0; s < 8; ++s)
    for (int l = 0; l < 8; ++l) {
      const std::uint64_t at = 1'000'000 + 1'000'000ull * s + 100'000ull * l + 50'000;
      t.syncs.push_back({.start_ns = at, .end_ns = at + 1'000, .kind = kind, .device = 0, .stream = 7});
    }
  t.sort_by_time();
  return t;
}

TEST(SyncInLoop, ManyCheapSyncsInEveryIterationAreStillSyncsInTheLoop) {
  const auto f = only(detect(eight_syncs_per_step(SyncKind::Device)), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("8 syncs in the median one"), std::string::npos) << f[0].message;
}

// PyTorch's allocators query their events all the time: a query that finds
// an event done does not block the host.
TEST(SyncInLoop, EventQueriesThatFoundTheWorkDoneAreNoSyncs) {
  EXPECT_TRUE(only(detect(eight_syncs_per_step(SyncKind::Query)), "GD010").empty());
}

// CUPTI's records of the same queries, as nsys, Kineto and older traces
// hold them: event syncs whose calls are cudaEventQuery. Loaded, they are
// no syncs either; taken as the event syncs they claim to be, they were.
TEST(SyncInLoop, EventQueriesReportedAsEventSyncsAreNoSyncsOnceLoaded) {
  Trace t = eight_syncs_per_step(SyncKind::Event);
  std::uint64_t correlation = 1000;
  for (Sync& s : t.syncs) {
    s.correlation = ++correlation;
    t.api_calls.push_back({.start_ns = s.start_ns - 100, .end_ns = s.end_ns + 100,
                           .name = t.intern("cudaEventQuery_v3020"), .correlation = correlation});
  }
  t.sort_by_time();
  ASSERT_EQ(only(detect(t), "GD010").size(), 1u);
  t.join_syncs_with_their_calls();
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}


// One GD007 for growth on device 0, its stack topped by `function`.
void expect_growth_from(const Trace& t, const char* function) {
  const auto f = only(detect(t), "GD007");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("live memory on device 0 grew by"), std::string::npos) << f[0].message;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].function, function);
}

TEST(MemoryLeak, MemoryThatGrowsEveryIterationIsALeakWithTheLoopsStack) {
  Trace t = training_loop(10, 0, 1'000'000);
  alloc(t, 1000, 0x10000000, 512u << 20, 0, stack_named(t, "caching_allocator_segment"));  // held to the end: no leak
  for (int s = 0; s < 10; ++s)
    alloc(t, 1'000'000 + 1'000'000ull * s + 500'000, 0x40000000 + (4ull << 20) * s, 2u << 20, 0,
          stack_named(t, "losses_append"));
  t.sort_by_time();
  expect_growth_from(t, "losses_append");
}

// A CUDA loop queues all its steps before the GPU has run the first few: its
// allocations, on the host's clock, come long before the GPU's iterations.
// The leak shows on the clock of the launches that start each iteration.
TEST(MemoryLeak, AHostFarAheadOfTheGpuStillShowsTheGrowthOfItsLaunches) {
  Trace t = training_loop(10, 0, 50'000'000);
  launch_far_ahead(t);
  for (int s = 0; s < 10; ++s)
    alloc(t, 1'000'000 + 20'000ull * s + 500, 0x40000000 + (4ull << 20) * s, 2u << 20, 0,
          stack_named(t, "pixel_loss_buffer"));
  t.sort_by_time();
  expect_growth_from(t, "pixel_loss_buffer");
}

TEST(MemoryLeak, MemoryHeldUntilExitWithoutGrowingIsNoLeakInALoop) {
  Trace t = training_loop(10, 0, 1'000'000);
  alloc(t, 1000, 0x10000000, 512u << 20, 0, stack_named(t, "caching_allocator_segment"));
  for (int s = 0; s < 10; ++s) {  // the activations of a step, freed within it
    alloc(t, 1'000'000 + 1'000'000ull * s + 100'000, 0x40000000, 2u << 20);
    free_at(t, 1'000'000 + 1'000'000ull * s + 900'000, 0x40000000);
  }
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD007").empty()) << only(detect(t), "GD007").front().message;
}

// Gradients and optimizer state are made in the first step and kept: the
// first step grows memory once, which is no leak.
TEST(MemoryLeak, StateTheFirstIterationMakesAndKeepsIsNoLeak) {
  Trace t = training_loop(10, 0, 1'000'000);
  alloc(t, 1'000'000 + 300'000, 0x20000000, 64u << 20, 0, stack_named(t, "adam_state"));
  for (int s = 0; s < 10; ++s) {
    alloc(t, 1'000'000 + 1'000'000ull * s + 100'000, 0x40000000, 2u << 20);
    free_at(t, 1'000'000 + 1'000'000ull * s + 900'000, 0x40000000);
  }
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD007").empty()) << only(detect(t), "GD007").front().message;
}

TEST(MemoryLeak, TwoIterationsAreTooFewToCallGrowthALeak) {
  Trace t;
  for (int s = 0; s < 3; ++s) {
    t.ranges.push_back({.start_ns = 1'000'000ull * s, .end_ns = 1'000'000ull * s + 900'000,
                        .name = t.intern("ProfilerStep#" + std::to_string(s))});
    alloc(t, 1'000'000ull * s + 500'000, 0x40000000 + (4ull << 20) * s, 2u << 20);
  }
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD007").empty()) << only(detect(t), "GD007").front().message;
}

// A program that names its steps itself (NVTX "step 12", "step 13", ...),
// with no profiler steps: those ranges are its iterations.
Trace launches_in_named_ranges(const std::string& name, int steps, int launches_per_step) {
  Trace t;
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t at = 1'000'000ull * (s + 1);
    t.ranges.push_back({.start_ns = at, .end_ns = at + 900'000, .name = t.intern(name + std::to_string(s)), .tid = 7});
    // an inner range of the same thread, nested: not a step of its own
    t.ranges.push_back({.start_ns = at + 10, .end_ns = at + 100, .name = t.intern("forward"), .tid = 7});
    for (int k = 0; k < launches_per_step; ++k)
      t.api_calls.push_back({.start_ns = at + 1000ull * (k + 1), .end_ns = at + 1000ull * (k + 1) + 5,
                             .name = t.intern("cudaLaunchKernel"), .tid = 7});
  }
  t.sort_by_time();
  return t;
}

TEST(Iterations, RangesTheProgramNamedAsStepsAreItsIterations) {
  const RunPhases p = find_phases(launches_in_named_ranges("step ", 5, 10));
  EXPECT_EQ(p.source, "named ranges");
  ASSERT_EQ(p.iterations.size(), 5u);
  EXPECT_EQ(p.iterations[0].begin, 1'000'000u);
  EXPECT_EQ(p.iterations[4].end, 5'900'000u);
}

TEST(Iterations, NamedRangesThatHoldFewLaunchesOrRepeatTooLittleAreNoLoop) {
  Trace few = launches_in_named_ranges("step ", 2, 10);  // two steps: too few to call a loop
  EXPECT_NE(find_phases(few).source, "named ranges");
  Trace aside = launches_in_named_ranges("step ", 5, 1);
  for (int k = 0; k < 50; ++k)  // most launches outside the ranges
    aside.api_calls.push_back({.start_ns = 10'000'000ull + 1000ull * k, .end_ns = 10'000'000ull + 1000ull * k + 5,
                               .name = aside.intern("cudaLaunchKernel"), .tid = 7});
  aside.sort_by_time();
  EXPECT_NE(find_phases(aside).source, "named ranges");
}

TEST(Iterations, TheLoopIsFoundAfterAStartUpOfOtherKernels) {
  Trace t = training_loop(8, 0, 50'000'000);
  for (int k = 0; k < 300; ++k) kernel(t, 1000ull + 100'000ull * k, 1000ull + 100'000ull * k + 50, "autotune" + std::to_string(k));
  t.sort_by_time();
  const RunPhases p = find_phases(t);
  ASSERT_EQ(p.iterations.size(), 7u);
  // It may begin at any kernel of the first step: where the repeating run was found.
  EXPECT_GE(p.iterations.front().begin, 50'000'000u);
  EXPECT_LT(p.iterations.front().begin, 51'000'000u);
  EXPECT_EQ(p.source, "repeating kernel sequence");
  EXPECT_GT(p.startup_ns(), 49'000'000u);
}

// Found from the GPU's kernels, the iterations are when the GPU ran them;
// the host's run from the launch of each iteration's first kernel, which
// may be long before. Without the launches, the host's are the GPU's.
TEST(Iterations, TheHostsIterationsRunFromTheLaunchOfEachIterationsFirstKernel) {
  Trace t = training_loop(10, 0, 50'000'000);
  launch_far_ahead(t);
  t.sort_by_time();
  const RunPhases p = find_phases(t);
  ASSERT_EQ(p.iterations.size(), 9u);
  ASSERT_EQ(p.host_iterations.size(), p.iterations.size());
  for (std::size_t k = 0; k < p.iterations.size(); ++k) {
    // The GPU ran kernel j of step s at 50 ms + s ms + j * 40 us; the host launched it at 1 ms + s * 20 us + j us.
    const std::uint64_t since = p.iterations[k].begin - 50'000'000, s = since / 1'000'000, j = since % 1'000'000 / 40'000;
    EXPECT_EQ(p.host_iterations[k].begin, 1'000'000 + 20'000 * s + 1'000 * j) << k;
    EXPECT_EQ(p.host_iterations[k].length(), 20'000u) << k;
    EXPECT_EQ(p.iterations[k].length(), 1'000'000u) << k;
  }
  EXPECT_LT(p.host_steady().end, p.steady().begin);

  t.api_calls.clear();
  const RunPhases unlaunched = find_phases(t);
  EXPECT_EQ(unlaunched.host_iterations, unlaunched.iterations);
}

// Each step's kernels go to one of two streams by chance, so neither stream
// repeats but their device does; another device runs more kernels, none of
// them a loop. The loop is looked for on the busiest stream's device.
TEST(Iterations, WhereNoStreamRepeatsTheBusiestStreamsDeviceIsSearchedNotTheBusiestDevice) {
  Trace t;
  std::mt19937 rng(11);
  for (std::uint64_t s = 0; s < 40; ++s)
    for (std::uint64_t k = 0; k < 20; ++k) {
      const std::uint64_t at = 1'000'000 * s + 40'000 * k;
      kernel(t, at, at + 10'000, "layer" + std::to_string(k), 0, rng() % 2 == 0 ? 7 : 8);
    }
  for (std::uint64_t k = 0; k < 1000; ++k)
    kernel(t, 1000 + 39'000 * k, 1000 + 39'000 * k + 5'000, "op" + std::to_string(k), 1, 20 + k % 10);
  t.sort_by_time();
  Trace one_stream = t;
  std::erase_if(one_stream.kernels, [](const Kernel& k) { return k.stream != 7; });
  ASSERT_TRUE(detect_iterations(one_stream).empty()) << "no stream alone shows the loop";
  const auto it = detect_iterations(t);
  ASSERT_EQ(it.size(), 39u);
  EXPECT_EQ(it[0].length(), 1'000'000u);
}

// A model of 12 identical layers: the layer's kernels repeat 12 times a
// step, but the step is the iteration.
TEST(Iterations, RepeatedLayersAreNotIterations) {
  Trace t;
  for (int s = 0; s < 9; ++s) {
    std::uint64_t at = 10'000'000ull * s;
    kernel(t, at, at + 10, "embed"), at += 1000;
    for (int layer = 0; layer < 12; ++layer)
      for (const char* k : {"gemm", "bias", "norm", "relu", "gemm_out"}) kernel(t, at, at + 10, k), at += 1000;
    for (const char* k : {"head", "loss", "backward", "adam"}) kernel(t, at, at + 10, k), at += 1000;
  }
  const auto it = detect_iterations(t);
  ASSERT_EQ(it.size(), 8u) << "the steps, not the layers";
  EXPECT_EQ(it[0].length(), 10'000'000u);
}

// One forward pass of a small language model profiled as one step, as
// torch.profiler writes it (h100-vit-falconsai in the shared traces has this
// shape): an embedding, 12 identical layers launched back to back, a head;
// launch-bound, each kernel launched 250 us before it runs and the GPU idle
// 30 to 55 us between kernels, the gap set by the op before.
Trace one_forward_pass(bool profiled_as_a_step) {
  Trace t;
  t.source = TraceSource::Kineto;
  std::uint64_t at = 1'000'000, correlation = 0;
  const auto launch = [&](const std::string& name, std::uint64_t ns, std::uint64_t gap_after) {
    ++correlation;
    t.api_calls.push_back({.start_ns = at - 250'000, .end_ns = at - 245'000, .name = t.intern("cudaLaunchKernel"),
                           .tid = 1, .correlation = correlation});
    kernel(t, at, at + ns, name, 0, 7, correlation);
    at += ns + gap_after;
  };
  launch("patch_embedding", 20'000, 40'000);
  for (int layer = 0; layer < 12; ++layer) {
    launch("layer_norm", 3'000, 55'000);
    launch("qkv_gemm", 12'000, 30'000);
    launch("flash_fwd", 15'000, 50'000);
    launch("out_gemm", 8'000, 30'000);
    launch("residual_add", 2'000, 35'000);
    launch("layer_norm", 3'000, 55'000);
    launch("mlp_up_gemm", 14'000, 30'000);
    launch("gelu", 4'000, 45'000);
    launch("mlp_down_gemm", 14'000, 30'000);
    launch("residual_add", 2'000, 40'000);
  }
  launch("final_norm", 3'000, 40'000);
  launch("classifier_gemm", 10'000, 0);
  if (profiled_as_a_step)
    t.ranges.push_back({.start_ns = 500'000, .end_ns = at + 100'000, .name = t.intern("ProfilerStep#6"), .tid = 1});
  t.sort_by_time();
  return t;
}

TEST(Iterations, TheLayersOfOneForwardPassAreNoLoop) {
  const RunPhases p = find_phases(one_forward_pass(false));
  EXPECT_FALSE(p.has_loop()) << p.iterations.size() << " iterations from the " << p.source;
  EXPECT_EQ(p.startup_ns(), 0u);
}

// With one profiler step, that step is the window, as TraceLens takes it: one
// iteration, nothing set apart as start-up, and the GPU time is the busy
// share of the step's GPU work, the union of its kernels over their span.
TEST(Iterations, OneProfilerStepIsTheWindowAndTheOnlyIteration) {
  const Trace t = one_forward_pass(true);
  const RunPhases p = find_phases(t);
  EXPECT_EQ(p.source, "profiler steps");
  ASSERT_EQ(p.iterations.size(), 1u);
  EXPECT_EQ(p.iterations[0], (Interval{500'000, t.ranges[0].end_ns}));
  EXPECT_EQ(p.startup_ns(), 0u);
  const Interval work{t.kernels.front().start_ns, t.kernels.back().end_ns};
  EXPECT_EQ(p.gpu_steady(), work);

  const Report r = analyze(t);
  ASSERT_EQ(r.gpu_time.size(), 1u);
  std::uint64_t busy = 0;
  for (const Kernel& k : t.kernels) busy += k.end_ns - k.start_ns;  // none overlap
  EXPECT_EQ(r.gpu_time[0].busy_ns, busy);
  EXPECT_EQ(r.gpu_time[0].total_ns, work.length());
  std::ostringstream summary;
  print_summary(summary, t, r, {});
  EXPECT_NE(summary.str().find("profiled window: 1 profiler step, "), std::string::npos) << summary.str();
  EXPECT_EQ(summary.str().find("training loop"), std::string::npos) << summary.str();
  EXPECT_EQ(summary.str().find("before the first iteration"), std::string::npos) << summary.str();
}

// A gdrt run that aborts at its first convolution (samples/device-mismatch):
// the model's parameters copied to the device one by one, then the data
// loader makes 16 samples on the host, five ops each, back to back. The
// samples repeat; they are no iterations.
TEST(Iterations, TheSamplesALoaderMakesBeforeARunAbortsAreNoIterations) {
  Trace t;
  std::uint64_t at = 1'000'000;
  for (int p = 0; p < 30; ++p, at += 20'000)
    t.memcpys.push_back(copy(at, at + 500, CopyKind::HtoD, 128 + 64 * (p % 5), false, MemKind::Pageable));
  at += 3'000'000;
  for (int sample = 0; sample < 16; ++sample) {
    const std::uint64_t gaps[] = {10'000 + 1'000ull * (sample % 4), 8'000, 2'500, 1'500, 9'000 - 500ull * (sample % 3)};
    const std::uint64_t lengths[] = {150'000, 2'000, 300, 1'200, 7'000};
    const char* names[] = {"gdrt::random", "gdrt::binary", "gdrt::fill", "gdrt::binary", "gdrt::binary"};
    for (int k = 0; k < 5; ++k) {
      at += gaps[k];
      kernel(t, at, at + lengths[k], names[k], kHostDevice, 0);
      at += lengths[k];
    }
  }
  t.sort_by_time();
  const RunPhases p = find_phases(t);
  EXPECT_FALSE(p.has_loop()) << p.iterations.size() << " iterations from the " << p.source;
}

// The host far ahead, the GPU runs one step after the other with no gap; each
// step copies its batch in. Without the copies nothing tells the steps from
// the layers of one long forward pass.
TEST(Iterations, AGpuBoundLoopIsFoundByItsTrafficWithTheHost) {
  Trace t;
  for (std::uint64_t s = 0; s < 8; ++s)
    for (std::uint64_t k = 0; k < 20; ++k) kernel(t, 800'000 * s + 40'000 * k, 800'000 * s + 40'000 * (k + 1), "op" + std::to_string(k));
  t.sort_by_time();
  EXPECT_FALSE(find_phases(t).has_loop());
  for (std::uint64_t s = 0; s < 8; ++s)
    t.memcpys.push_back(copy(800'000 * s + 1'000, 800'000 * s + 2'000, CopyKind::HtoD, 1 << 20, true));
  t.sort_by_time();
  const RunPhases p = find_phases(t);
  EXPECT_EQ(p.source, "repeating kernel sequence");
  EXPECT_EQ(p.iterations.size(), 7u);
}

TEST(Iterations, ProfilerStepsOfOneThreadMarkTheLoopNestedOrRepeatedOnesLeftOut) {
  Trace t = training_loop(3, 0);
  for (int s = 0; s < 4; ++s) {
    const auto name = t.intern("ProfilerStep#" + std::to_string(s));
    t.ranges.push_back({.start_ns = 100'000'000ull + 10'000'000ull * s, .end_ns = 100'000'000ull + 10'000'000ull * (s + 1), .name = name, .tid = 1});
    t.ranges.push_back({.start_ns = 100'000'000ull + 10'000'000ull * s + 5, .end_ns = 100'000'000ull + 10'000'000ull * s + 50, .name = name, .tid = 2});
  }
  t.ranges.push_back({.start_ns = 100'000'100, .end_ns = 100'000'200, .name = t.intern("ProfilerStep#9"), .tid = 1});  // nested
  t.sort_by_time();
  const RunPhases p = find_phases(t);
  EXPECT_EQ(p.source, "profiler steps");
  ASSERT_EQ(p.iterations.size(), 4u);
  EXPECT_EQ(p.steady().end, 140'000'000u);
  EXPECT_TRUE(p.in_steady_state(139'000'000));
}

TEST(SyncInLoop, SyncsInOneIterationOfManyAreNoSyncInTheLoop) {
  Trace t = training_loop(10, 0);
  for (int i = 0; i < 12; ++i)  // a checkpoint in step 4
    t.syncs.push_back({.start_ns = 4'000'000ull + 50'000ull * i, .end_ns = 4'000'000ull + 50'000ull * i + 40'000, .kind = SyncKind::Device});
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD010").empty()) << only(detect(t), "GD010").front().message;
}

TEST(LaunchBound, CopiesOfStartUpAreNotTheLoopsCopies) {
  Trace t = training_loop(10, 0, 100'000'000);
  for (int i = 0; i < 50; ++i)  // the model moved to the GPU: 90 ms of copies
    t.memcpys.push_back(copy(1000 + 2'000'000ull * i, 1000 + 2'000'000ull * i + 1'800'000, CopyKind::HtoD, 64u << 20, false));
  t.sort_by_time();
  for (const Finding& f : only(detect(t), "GD011"))
    EXPECT_EQ(f.message.find("copies took"), std::string::npos) << f.message;
}

// A bounded trace's loop is found where it has every event, and the part it
// dropped before that is not start-up.
TEST(Iterations, ABoundedTracesLoopIsFoundInItsDetailAndItsDroppedPartIsNoStartUp) {
  Trace t = testing::training_loop(200, 0, 5'000'000'000);
  t.detail_from_ns = 5'000'000'000 + 150 * 1'000'000;  // the last 50 steps
  const RunPhases p = find_phases(t);
  ASSERT_TRUE(p.has_loop());
  EXPECT_GE(p.iterations.front().begin, t.detail_from_ns);
  EXPECT_LT(p.startup_ns(), 1'000'000u) << "not the 150 steps dropped before the detail";
}

}  // namespace
}  // namespace gpudiag
