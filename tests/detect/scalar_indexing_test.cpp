// GD005 scalar-indexing at run time: reads of device memory one element at
// a time, told from the one scalar a step that every loop logs.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// A blocking 4-byte device-to-host read of `src` (0: address not recorded),
// as item() or a cudaMemcpy of one element makes.
Memcpy scalar_read(std::uint64_t at, std::uint64_t duration, std::uint64_t src) {
  Memcpy c = copy(at, at + duration, CopyKind::DtoH, 4, false);
  c.src = src;
  return c;
}

TEST(ScalarIndexing, ManyTinyCopiesAreCountedWithTheirStacks) {
  Trace t;
  const StackId loop = stack_named(t, "loop_over_elements");
  for (int i = 0; i < 50; ++i) {
    Memcpy c = copy(100 * i, 100 * i + 5, CopyKind::DtoH, 4, false);
    c.stack = loop;
    t.memcpys.push_back(c);
  }
  t.memcpys.push_back(copy(9000, 9100, CopyKind::HtoD, 4096, false));
  const auto f = only(detect(t), "GD005");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.rfind("the host read device memory 50 times, at most 8 B each", 0), 0u) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "loop_over_elements");
  DetectOptions strict;
  strict.tiny_transfer_count = 51;
  EXPECT_TRUE(only(detect(t, strict), "GD005").empty());
}

TEST(ScalarIndexing, SmallWritesNobodyWaitsForAreNoScalarAccess) {
  Trace t;
  for (int i = 0; i < 50; ++i) t.memcpys.push_back(copy(100 * i, 100 * i + 5, CopyKind::HtoD, 4, i % 2 == 0));
  EXPECT_TRUE(only(detect(t), "GD005").empty()) << "writes, blocking or not, are not reads of device values";
}

// An asynchronous copy into pinned memory returns at once: it holds the host
// only when the host waits for it (PyTorch's item() synchronises after its
// copy). Into pageable memory it returns only when done.
TEST(ScalarIndexing, OnlyReadsThatHoldTheHostCount) {
  Trace t;
  for (int i = 0; i < 50; ++i) {
    Memcpy c = copy(100 * i, 100 * i + 5, CopyKind::DtoH, 4, true);
    c.dst_kind = MemKind::Pinned;
    t.memcpys.push_back(c);
  }
  EXPECT_TRUE(only(detect(t), "GD005").empty()) << "asynchronous copies into pinned memory nobody waits for";
  for (int i = 0; i < 50; ++i)
    t.syncs.push_back({.start_ns = 100ull * i + 1, .end_ns = 100ull * i + 6, .kind = SyncKind::Stream, .device = 0});
  t.sort_by_time();
  EXPECT_EQ(only(detect(t), "GD005").size(), 1u) << "each waited for by a stream sync, as item() does";
  for (const SyncKind kind : {SyncKind::StreamWaitEvent, SyncKind::Query}) {
    for (Sync& s : t.syncs) s.kind = kind;
    EXPECT_TRUE(only(detect(t), "GD005").empty()) << "the host does not wait in a " << to_string(kind);
  }
  t.syncs.clear();
  for (Memcpy& c : t.memcpys) c.dst_kind = MemKind::Pageable;
  EXPECT_EQ(only(detect(t), "GD005").size(), 1u) << "cudaMemcpyAsync into pageable memory blocks";
}

// item() on an idle GPU: the copy into pinned memory lands before the host
// enters the cudaStreamSynchronize that is its thread's next call.
TEST(ScalarIndexing, APinnedReadSyncedByTheNextCallCountsThoughItLandedFirst) {
  Trace t;
  for (std::uint64_t i = 0; i < 50; ++i) {
    const std::uint64_t at = 1000 * i;
    t.api_calls.push_back({.start_ns = at, .end_ns = at + 10, .name = t.intern("cudaMemcpyAsync"), .tid = 3,
                           .correlation = 2 * i + 1});
    Memcpy c = copy(at + 5, at + 8, CopyKind::DtoH, 4, true);
    c.dst_kind = MemKind::Pinned;
    c.stream = 7;
    c.correlation = 2 * i + 1;
    t.memcpys.push_back(c);
    t.api_calls.push_back({.start_ns = at + 20, .end_ns = at + 25, .name = t.intern("cudaStreamSynchronize"), .tid = 3,
                           .correlation = 2 * i + 2});
    t.syncs.push_back({.start_ns = at + 20, .end_ns = at + 25, .kind = SyncKind::Stream, .device = 0, .stream = 7,
                       .correlation = 2 * i + 2});
  }
  t.sort_by_time();
  EXPECT_EQ(only(detect(t), "GD005").size(), 1u);
  for (Sync& s : t.syncs) s.stream = 8;
  EXPECT_TRUE(only(detect(t), "GD005").empty()) << "another stream's sync does not wait for the copy";
}

TEST(ScalarIndexing, InATrainingLoopOnlyTheReadsInTheLoopCount) {
  Trace t = training_loop(10, 0, 5'000'000);
  for (int i = 0; i < 30; ++i) t.memcpys.push_back(copy(1000 + 100 * i, 1000 + 100 * i + 5, CopyKind::DtoH, 4, false));
  EXPECT_TRUE(only(detect(t), "GD005").empty()) << "30 reads during start-up, none in the loop";
  for (int s = 0; s < 10; ++s)
    for (int r = 0; r < 2; ++r)  // x[0] and x[1] of one array
      t.memcpys.push_back(scalar_read(5'000'000 + 1'000'000ull * s + 900'000 + r * 100, 50, 0x7000'0000 + 4 * r));
  t.sort_by_time();
  const auto f = only(detect(t), "GD005");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("in the training loop (2.0 per iteration)"), std::string::npos) << f[0].message;
}

// loss.item() once a step, as almost every PyTorch loop logs its loss: one
// blocking 4-byte read an iteration is no element-by-element access.
TEST(ScalarIndexing, OneReadAnIterationIsNoScalarIndexing) {
  Trace t = training_loop(20, 0);
  for (std::uint64_t s = 0; s < 20; ++s)  // from the caching allocator's block of the step's loss
    t.memcpys.push_back(scalar_read(1'000'000 * s + 850'000, 10, 0x7000'0000 + 512 * (s % 3)));
  t.sort_by_time();
  ASSERT_EQ(find_phases(t).iterations.size(), 19u);
  EXPECT_TRUE(only(detect(t), "GD005").empty()) << only(detect(t), "GD005").front().message;
}

// A validation metric read from the predictions one element at a time, after
// steps 3 and 7: 16 reads in a row, x[0], x[1], ... of one array.
Trace predictions_read_one_by_one(bool with_addresses) {
  Trace t = training_loop(10, 0);
  alloc(t, 100, 0x7000'0000, 64);
  for (std::uint64_t s : {3, 7})
    for (std::uint64_t i = 0; i < 16; ++i)
      t.memcpys.push_back(scalar_read(1'000'000 * s + 800'000 + 1'000 * i, 10, with_addresses ? 0x7000'0000 + 4 * i : 0));
  t.sort_by_time();
  return t;
}

TEST(ScalarIndexing, AHostLoopOverAnArraysElementsIsScalarIndexing) {
  for (bool with_addresses : {true, false}) {
    const auto f = only(detect(predictions_read_one_by_one(with_addresses)), "GD005");
    ASSERT_EQ(f.size(), 1u) << (with_addresses ? "at increasing addresses" : "16 in a row");
    EXPECT_NE(f[0].message.find("32 times in the training loop (3.6 per iteration)"), std::string::npos) << f[0].message;
  }
  // Eight reads in a row at unknown addresses are a walk too; seven are not.
  Trace seven = training_loop(10, 0);
  for (std::uint64_t s = 0; s < 10; ++s)
    for (std::uint64_t i = 0; i < 7; ++i) seven.memcpys.push_back(scalar_read(1'000'000 * s + 800'000 + 1'000 * i, 10, 0));
  seven.sort_by_time();
  EXPECT_TRUE(only(detect(seven), "GD005").empty()) << "7.0 reads an iteration, of unknown addresses";
}

// Many reads every iteration are element-by-element access wherever they
// read; how many is an option.
TEST(ScalarIndexing, ManyReadsAnIterationAreScalarIndexingFromTheOptionsCountOn) {
  Trace t = training_loop(10, 0);
  for (std::uint64_t s = 0; s < 10; ++s)
    for (std::uint64_t m = 0; m < 8; ++m)  // eight scalars of their own, each after its kernel
      t.memcpys.push_back(scalar_read(1'000'000 * s + 40'000 * m + 31'000, 10, 0x7000'0000 + 512 * m));
  t.sort_by_time();
  const auto f = only(detect(t), "GD005");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("(8.0 per iteration)"), std::string::npos) << f[0].message;
  DetectOptions fewer;
  fewer.tiny_reads_per_iteration = 9;
  EXPECT_TRUE(only(detect(t, fewer), "GD005").empty());
}

}  // namespace
}  // namespace gpudiag
