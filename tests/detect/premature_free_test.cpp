// GD004 premature-free: a free while work that uses the memory is pending
// on another stream, a use after free and a double free; from the pointers
// each kernel launch was given, a block freed on another stream with nothing
// that ordered the launch before the free, a launch given a block already
// freed, and a PyTorch tensor's block made free again while a side stream
// reads it. Each bug has a correct twin.
#include <functional>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(PrematureFree, FreeWhileACopyOnAnotherStreamRunsIsReported) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0, stack_named(t, "alloc_activations"));
  Memcpy c = copy(100, 900, CopyKind::DtoH, 4096, true);
  c.src = 0xA000;
  c.stream = 3;
  t.memcpys.push_back(c);
  free_at(t, 200, 0xA000, 0, /*stream=*/0, stack_named(t, "release"));
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("still running"), std::string::npos);
  EXPECT_EQ(f[0].stack.at(0).function, "release");
}

TEST(PrematureFree, StreamOrderedFreeAndFinishedWorkAreFine) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  Memcpy c = copy(100, 900, CopyKind::DtoH, 4096, true);
  c.src = 0xA000;
  c.stream = 3;
  t.memcpys.push_back(c);
  free_at(t, 200, 0xA000, 0, /*stream=*/3);  // same stream: ordered after the copy
  alloc(t, 1000, 0xB000, 64, 0);
  Memcpy d = copy(1100, 1200, CopyKind::HtoD, 64, true);
  d.dst = 0xB000;
  t.memcpys.push_back(d);
  free_at(t, 1300, 0xB000);
  EXPECT_TRUE(only(detect(t), "GD004").empty());
}

// A host that runs ahead queues a copy, frees its buffer on the same stream
// (stream-ordered, as PyTorch's allocator and cudaFreeAsync do) and goes on:
// the copy runs after the free's call, but before the memory is reused. A
// copy queued after the free is a use after free all the same.
TEST(PrematureFree, WorkQueuedBeforeAFreeOnItsStreamRunsAfterItAndIsFine) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  const StringId call = t.intern("gdrt::copy");
  t.api_calls.push_back({.start_ns = 20, .end_ns = 21, .name = call, .correlation = 5});
  Memcpy queued_before = copy(300, 310, CopyKind::HtoD, 4096, true);
  queued_before.dst = 0xA000;
  queued_before.stream = 3;
  queued_before.correlation = 5;
  t.memcpys.push_back(queued_before);
  free_at(t, 200, 0xA000, 0, /*stream=*/3);
  EXPECT_TRUE(only(detect(t), "GD004").empty());

  t.api_calls.push_back({.start_ns = 250, .end_ns = 251, .name = call, .correlation = 6});
  Memcpy queued_after = queued_before;
  queued_after.start_ns = 400;
  queued_after.end_ns = 410;
  queued_after.correlation = 6;
  t.memcpys.push_back(queued_after);
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("copy into 0xa000"), std::string::npos) << f[0].message;
}

TEST(PrematureFree, UseAfterFreeAndDoubleFree) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  free_at(t, 20, 0xA000);
  t.memsets.push_back({.start_ns = 30, .end_ns = 40, .addr = 0xA100, .bytes = 16, .device = 0});
  free_at(t, 50, 0xA000);
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NE(f[0].message.find("freed"), std::string::npos);
  EXPECT_NE(f[1].message.find("double free"), std::string::npos);
}

// GD004: a free on another stream ------------------------------------------

constexpr std::uint64_t kStreamA = 13, kStreamB = 14;

// freeasync_race, round by round: src and out allocated on stream B; a
// kernel on stream A launched at 100 reads src until `kernel_end`;
// cudaFreeAsync(src, B) at 200, then B hands the same address out again; a
// device synchronisation at 300, and the round's buffers are freed.
// `between` adds what comes between the launch and the free.
template <class Between>
Trace free_async_race(std::uint64_t kernel_end, Between between, int rounds = 1) {
  Trace t;
  const StackId allocated = stack_named(t, "make_src", "race.cu", 60);
  const StackId launched = stack_named(t, "launch_spin_read", "race.cu", 66);
  const StackId released = stack_named(t, "release_src", "race.cu", 67);
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t base = 1000ull * r;
    t.allocs.push_back({.time_ns = base + 10, .addr = kSrc, .bytes = kMiB4, .kind = MemKind::Device, .device = 0,
                        .stream = kStreamB, .stack = allocated});
    t.allocs.push_back({.time_ns = base + 11, .addr = kOut, .bytes = kMiB4, .kind = MemKind::Device, .device = 0,
                        .stream = kStreamB});
    launch(t, 100 + r, base + 100, "spin_read(float const*, float*, int, long long)", kStreamA,
           {{kSrc, MemKind::Device}, {kOut, MemKind::Device}, {1 << 20, MemKind::Unknown}},
           kernel_end ? base + kernel_end : 0, launched);
    between(t, base);
    free_at(t, base + 200, kSrc, 0, kStreamB, released);
    t.allocs.push_back({.time_ns = base + 210, .addr = kSrc, .bytes = kMiB4, .kind = MemKind::Device, .device = 0,
                        .stream = kStreamB});  // junk
    launch(t, 200 + r, base + 220, "fill(float*, int, float)", kStreamB, {{kSrc, MemKind::Device}}, base + 230);
    sync(t, base + 300, SyncKind::Context);
    free_at(t, base + 900, kSrc, 0, kStreamB);
    free_at(t, base + 901, kOut, 0, kStreamB);
  }
  return t;
}

const auto nothing = [](Trace&, std::uint64_t) {};

TEST(KernelArguments, ABlockFreedOnAnotherStreamWhileTheKernelGivenItRunsIsGD004) {
  const auto f = only(detect(free_async_race(280, nothing)), "GD004");
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("4.00 MiB at 0x302000000 was freed on stream 14 while kernel spin_read(float const*, float*, int, "
                   "long long), given it as parameter 0 on stream 13, was still running (it ended 80 ns after the free): "
                   "nothing ordered the launch before the free"),
            std::string::npos) << m;
  EXPECT_NE(m.find("Record an event on stream 13 after the launch and make stream 14 wait for it "
                   "(cudaStreamWaitEvent) before the free, or free it on stream 13"),
            std::string::npos) << m;
  EXPECT_EQ(m.find("it happened"), std::string::npos) << m;
  EXPECT_EQ(f[0].stack.at(0).function, "release_src");
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].message, "spin_read(float const*, float*, int, long long) was launched here, on stream 13");
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "launch_spin_read");
  EXPECT_EQ(f[0].notes[1].message, "the memory was allocated here");
  EXPECT_EQ(f[0].notes[1].stack.at(0).function, "make_src");
}

TEST(KernelArguments, EveryRoundOfTheRaceIsOneFindingAndAMissingKernelRecordStillCounts) {
  const auto rounds = only(detect(free_async_race(280, nothing, 10)), "GD004");
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_NE(rounds[0].message.find("while the kernel reads it; it happened 10 times with this kernel, parameter and "
                                   "free. Record"),
            std::string::npos)
      << rounds[0].message;
  const auto unrecorded = only(detect(free_async_race(0, nothing)), "GD004");
  ASSERT_EQ(unrecorded.size(), 1u);
  EXPECT_NE(unrecorded[0].message.find("may still have been running (its end was not recorded)"), std::string::npos)
      << unrecorded[0].message;
}

TEST(KernelArguments, AFreeOrderedAfterTheLaunchIsNoGD004) {
  const std::vector<std::pair<const char*, std::function<void(Trace&, std::uint64_t)>>> orderings = {
      {"device synchronisation", [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::Device); }},
      {"context synchronisation", [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::Context); }},
      {"stream A synchronised", [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::Stream, kStreamA); }},
      {"stream B waited for an event",
       [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::StreamWaitEvent, kStreamB); }},
      {"an event synchronised", [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::Event); }},
      {"a stream query that succeeded", [](Trace& t, std::uint64_t b) { call(t, b + 150, "cudaStreamQuery"); }},
  };
  for (const auto& [what, between] : orderings) {
    SCOPED_TRACE(what);
    // The kernel record ends after the free: only the ordering makes it right.
    EXPECT_TRUE(only(detect(free_async_race(0, between)), "GD004").empty());
  }
  // The kernel had ended before the free (one clock for GPU and API times).
  EXPECT_TRUE(only(detect(free_async_race(150, nothing)), "GD004").empty());
}

TEST(KernelArguments, WaitsThatDoNotOrderTheLaunchBeforeTheFreeLeaveItGD004) {
  const std::vector<std::pair<const char*, std::function<void(Trace&, std::uint64_t)>>> waits = {
      {"stream B synchronised", [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::Stream, kStreamB); }},
      {"stream A waited for an event",
       [](Trace& t, std::uint64_t b) { sync(t, b + 150, SyncKind::StreamWaitEvent, kStreamA); }},
      {"a device synchronisation before the launch",
       [](Trace& t, std::uint64_t b) { sync(t, b + 50, SyncKind::Device); }},
      {"a stream query that was not ready",
       [](Trace& t, std::uint64_t b) { call(t, b + 150, "cudaStreamQuery", 600); }},
  };
  for (const auto& [what, between] : waits) {
    SCOPED_TRACE(what);
    EXPECT_EQ(only(detect(free_async_race(280, between)), "GD004").size(), 1u);
  }
}

// The legacy default stream (here 7, the stream of a blocking copy) waits
// for blocking streams' work and theirs for its: a launch or a free on it
// may be ordered with no event in the trace.
// A block given to a kernel on stream A that runs long, then freed on `stream`.
Trace given_on_a_then_freed_on(std::uint64_t stream) {
  Trace t;
  alloc(t, 10, kSrc, kMiB4, 0);
  launch(t, 1, 100, "consume(float*)", kStreamA, {{kSrc, MemKind::Device}}, 5000);
  free_at(t, 200, kSrc, 0, stream);
  return t;
}

TEST(KernelArguments, ALaunchOrAFreeOnTheDefaultStreamIsNotJudged) {
  auto traced = [](std::uint64_t launch_stream, std::uint64_t free_stream, bool blocking_copy) {
    Trace t;
    alloc(t, 10, kSrc, kMiB4, 0);
    if (blocking_copy) {
      Memcpy c = copy(20, 30, CopyKind::HtoD, 4096, /*async=*/false);
      c.dst = kSrc;
      t.memcpys.push_back(c);  // on stream 7
    }
    launch(t, 1, 100, "consume(float*)", launch_stream, {{kSrc, MemKind::Device}}, 5000);
    if (free_stream == kStreamB) launch(t, 2, 150, "prepare()", kStreamB, {}, 160);  // B runs work of its own
    free_at(t, 200, kSrc, 0, free_stream);
    return t;
  };
  EXPECT_TRUE(only(detect(traced(7, kStreamB, true)), "GD004").empty());
  EXPECT_TRUE(only(detect(traced(kStreamA, 7, true)), "GD004").empty());
  EXPECT_EQ(only(detect(traced(7, kStreamB, false)), "GD004").size(), 1u) << "nothing says 7 is the default stream";
  EXPECT_EQ(only(detect(traced(kStreamA, kStreamB, true)), "GD004").size(), 1u);
  // cudaFreeAsync(p, 0) in a program that makes no blocking copy: the freeing
  // stream ran nothing else, and may be the legacy default stream.
  EXPECT_TRUE(only(detect(given_on_a_then_freed_on(kStreamB)), "GD004").empty());
}

TEST(KernelArguments, AFreeOnTheLaunchsStreamIsOrderedAfterIt) {
  EXPECT_TRUE(only(detect(given_on_a_then_freed_on(kStreamA)), "GD004").empty());
}

TEST(KernelArguments, ASynchronousFreeIsGD004OnlyWhenTheKernelIsSeenRunningPastIt) {
  auto traced = [](std::uint64_t kernel_end) {
    Trace t;
    alloc(t, 10, kSrc, kMiB4, 0);
    launch(t, 1, 100, "consume(float*)", kStreamA, {{kSrc, MemKind::Device}}, kernel_end);
    free_at(t, 200, kSrc, 0, /*stream=*/0);
    return t;
  };
  const auto seen = only(detect(traced(5000)), "GD004");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].message.find("was freed while kernel consume(float*), given it as parameter 0 on stream 13, was "
                                 "still running (it ended 4.80 us after the free)"),
            std::string::npos) << seen[0].message;
  EXPECT_TRUE(only(detect(traced(0)), "GD004").empty()) << "cudaFree waits for the device";
  EXPECT_TRUE(only(detect(traced(150)), "GD004").empty());
}

// GD004: use after free -----------------------------------------------------

TEST(KernelArguments, ALaunchGivenAFreedBlockIsAUseAfterFree) {
  Trace t;
  alloc(t, 10, kSrc, kMiB4, 0, stack_named(t, "make_src"));
  free_at(t, 20, kSrc, 0, kStreamA, stack_named(t, "release_src"));
  launch(t, 1, 30, "consume(float*, float*)", kStreamA, {{kOut, MemKind::Device}, {kSrc + 256, MemKind::Device}});
  launch(t, 2, 40, "consume(float*, float*)", kStreamA, {{kOut, MemKind::Device}, {kSrc + 256, MemKind::Device}});
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("kernel consume(float*, float*) was given, in 2 launches, as parameter 1 the address "
                              "0x302000100, inside 4.00 MiB that was freed 10 ns earlier"),
            std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "launch_site");
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "release_src");
  EXPECT_EQ(f[0].notes[1].stack.at(0).function, "make_src");
}

TEST(KernelArguments, AnAddressAllocatedAgainOrANumberIsNoUseAfterFree) {
  Trace t;
  alloc(t, 10, kSrc, kMiB4, 0);
  free_at(t, 20, kSrc, 0, kStreamA);
  launch(t, 1, 30, "consume(float*, long)", kStreamA, {{kSrc + 256, MemKind::Unknown}});  // a number
  alloc(t, 35, kSrc, kMiB4, 0);                                                          // the address again
  launch(t, 2, 40, "consume(float*, long)", kStreamA, {{kSrc + 256, MemKind::Device}});
  EXPECT_TRUE(only(detect(t), "GD004").empty());
}

// A caching allocator (PyTorch) never frees: blocks handed from stream to
// stream are none of the trace's frees. Pinned and managed arguments are fine.
TEST(KernelArguments, ACachingAllocatorPinnedAndManagedArgumentsAreNoGD004) {
  Trace t;
  alloc(t, 10, kSrc, 64ull << 20, 0);
  alloc(t, 10, 0x7f0000000000, 4096, kHostDevice, kNoStack, MemKind::Pinned);
  for (std::uint64_t i = 0; i < 20; ++i)
    launch(t, 1 + i, 100 + 10 * i, "op(float*, float*, float*)", i % 2 ? kStreamA : kStreamB,
           {{kSrc + (i % 4) * 4096, MemKind::Device},
            {0x7f0000000000, MemKind::Pinned},
            {0x7e0000000000, MemKind::Managed}},
           100 + 10 * i + 50);
  EXPECT_TRUE(only(detect(t), "GD004").empty());
  EXPECT_TRUE(only(detect(t), "GD001").empty());
}

// GD004: a PyTorch tensor's block made free again (allocator history) ------

constexpr std::uint64_t kMain = 7, kSide = 14;  // PyTorch's default stream, a torch.cuda.Stream()

// torch_side_stream_no_record_stream, step by step: x made on the main
// stream at base+10; a kernel on the side stream given x launched at
// base+100 runs until base+`kernel_end` (unrecorded when 0); x dropped at
// base+200. Without record_stream its block is free again at once; with it,
// only at base+`free_ns`, once the allocator saw the side stream's event done.
template <class Between>
Trace dropped_while_side_reads(std::uint64_t kernel_end, Between between, std::uint64_t free_ns = 200,
                               int steps = 1) {
  Trace t;
  const StackId made = stack_named(t, "main", "side_stream.py", 43);
  const StackId dropped = stack_named(t, "main", "side_stream.py", 50);
  const StackId launched = stack_named(t, "main", "side_stream.py", 47);
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t base = 10000ull * s;
    t.cached_blocks.push_back({.device = 0, .addr = kSrc, .bytes = kMiB4, .stream = kMain, .stream_known = true,
                               .alloc_ns = base + 10, .free_requested_ns = base + 200, .free_ns = base + free_ns,
                               .stack = made, .free_stack = dropped});
    launch(t, 100 + s, base + 10, "fill(float*)", kMain, {{kSrc, MemKind::Device}}, base + 20);
    launch(t, 1000 + s, base + 100, "mul(float const*, float*)", kSide, {{kSrc, MemKind::Device}, {kOut, MemKind::Device}},
           kernel_end ? base + kernel_end : 0, launched);
    between(t, base);
    launch(t, 2000 + s, base + 210, "fill(float*)", kMain, {{kSrc, MemKind::Device}}, base + 220);  // z, in x's block
  }
  alloc(t, 0, kSrc, 20ull << 20, 0);  // the allocator's segment: never freed
  return t;
}

TEST(KernelArguments, ATensorDroppedWhileASideStreamReadsItIsGD004FromTheAllocatorHistory) {
  const auto f = only(detect(dropped_while_side_reads(5000, nothing)), "GD004");
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("a tensor of 4.00 MiB at 0x302000000, made on stream 7, was dropped and PyTorch's caching allocator "
                   "made its memory free again for stream 7 while kernel mul(float const*, float*), given it as "
                   "parameter 0 on stream 14, was still running (it ended 4.80 us after that): nothing ordered the launch "
                   "before it"),
            std::string::npos) << m;
  EXPECT_NE(m.find("Call tensor.record_stream() with the stream that uses it before dropping it"), std::string::npos)
      << m;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].line, 50u);
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).line, 47u);
  EXPECT_EQ(f[0].notes[1].message, "the tensor was made here");
  EXPECT_EQ(f[0].notes[1].stack.at(0).line, 43u);
  const auto steps = only(detect(dropped_while_side_reads(5000, nothing, 200, 30)), "GD004");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].message.find("it happened 30 times with this kernel, parameter and drop"), std::string::npos);
  EXPECT_EQ(only(detect(dropped_while_side_reads(0, nothing)), "GD004").size(), 1u) << "its end unrecorded";
}

TEST(KernelArguments, RecordStreamOrAWaitOfTheMainStreamMakesTheDropNoGD004) {
  // record_stream: the block is free again only after the side stream's kernel ended...
  EXPECT_TRUE(only(detect(dropped_while_side_reads(5000, nothing, 6000)), "GD004").empty());
  // ...which the allocator learnt from a query of its event (the kernel's end unrecorded).
  EXPECT_TRUE(only(detect(dropped_while_side_reads(0, [](Trace& t, std::uint64_t b) {
                  call(t, b + 5500, "cudaEventQuery");
                }, 6000)),
                   "GD004")
                  .empty());
  // main.wait_stream(side) before the drop.
  EXPECT_TRUE(only(detect(dropped_while_side_reads(5000, [](Trace& t, std::uint64_t b) {
                  sync(t, b + 150, SyncKind::StreamWaitEvent, kMain);
                })),
                   "GD004")
                  .empty());
  // The allocator's query found an event of the side stream done.
  EXPECT_TRUE(only(detect(dropped_while_side_reads(5000, [](Trace& t, std::uint64_t b) {
                  t.syncs.push_back({.start_ns = b + 150, .end_ns = b + 151, .kind = SyncKind::Query,
                                     .device = 0, .stream = kSide});
                })),
                   "GD004")
                  .empty());
  // A query that found an event of the main stream done (the pinned-memory
  // allocator's, in a DataLoader run) orders nothing of the side stream, and
  // its call is not taken for an unknown synchronisation.
  EXPECT_EQ(only(detect(dropped_while_side_reads(5000, [](Trace& t, std::uint64_t b) {
              call(t, b + 150, "cudaEventQuery", 0, 9000 + b);
              t.syncs.push_back({.start_ns = b + 150, .end_ns = b + 151, .kind = SyncKind::Query, .device = 0,
                                 .stream = kMain, .correlation = 9000 + b});
            })),
                 "GD004")
                .size(),
            1u);
  // The side stream waiting for the main one orders nothing here.
  EXPECT_EQ(only(detect(dropped_while_side_reads(5000, [](Trace& t, std::uint64_t b) {
              sync(t, b + 150, SyncKind::StreamWaitEvent, kSide);
            })),
                 "GD004")
                .size(),
            1u);
}

TEST(KernelArguments, CachedBlocksOnTheirOwnStreamOrOfUnknownStreamsAreNotJudged) {
  Trace same = dropped_while_side_reads(5000, nothing);
  for (KernelArg& a : same.kernel_args) a.stream = kMain;
  EXPECT_TRUE(only(detect(same), "GD004").empty());
  Trace unknown = dropped_while_side_reads(5000, nothing);
  unknown.cached_blocks[0].stream_known = false;
  EXPECT_TRUE(only(detect(unknown), "GD004").empty());
  // Launched after the tensor was dropped: another tensor's block by then.
  Trace later = dropped_while_side_reads(5000, nothing);
  later.cached_blocks[0].free_requested_ns = later.cached_blocks[0].free_ns = 50;
  EXPECT_TRUE(only(detect(later), "GD004").empty());
  // PyTorch's streams are non-blocking: a blocking copy on the main stream,
  // which makes it the legacy default stream to the CUDA-level check, excuses nothing.
  Trace blocking = dropped_while_side_reads(5000, nothing);
  Memcpy c = copy(20, 30, CopyKind::HtoD, 4096, /*async=*/false);
  c.stream = kMain;
  blocking.memcpys.push_back(c);
  EXPECT_EQ(only(detect(blocking), "GD004").size(), 1u);
}

}  // namespace
}  // namespace gpudiag
