// A finding's severity follows what it cost in the run: at or above its
// rule's threshold the catalogue's severity, below it a note or nothing,
// and the message says which threshold (an option of `gpudiag report`).
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// Float64 kernels at `fp64_ns` of 1 ms of kernel time.
Trace float64_kernels(std::uint64_t fp64_ns) {
  Trace t;
  kernel(t, 0, fp64_ns / 2, "void axpy<double>(double*, double const*, int)");
  kernel(t, fp64_ns / 2, fp64_ns, "void scale<double>(double*, int)");
  kernel(t, fp64_ns, 1'000'000, "void relu<float>(float*)");
  return t;
}

TEST(SeverityFollowsCost, Float64KernelsUnderTheShareAreOneNote) {
  const auto cheap = only(detect(float64_kernels(10'000)), "GD002");
  ASSERT_EQ(cheap.size(), 1u) << "one note for all of them";
  EXPECT_EQ(cheap[0].severity, Severity::Note);
  EXPECT_NE(cheap[0].message.find("2 kernels computed in Float64 for 10.0 us, 1.0% of kernel time, below the 5%"),
            std::string::npos)
      << cheap[0].message;
  EXPECT_NE(cheap[0].message.find("--float64-share"), std::string::npos);
  const auto costly = only(detect(float64_kernels(100'000)), "GD002");
  ASSERT_EQ(costly.size(), 2u) << "one warning per kernel";
  for (const Finding& f : costly) EXPECT_EQ(f.severity, Severity::Warning);
  DetectOptions strict;
  strict.float64_share = 0.005;
  EXPECT_EQ(only(detect(float64_kernels(10'000), strict), "GD002").front().severity, Severity::Warning);
}

// Pageable copies of a 100 ms run, each issued by a call that held the host
// `call_ns` while it staged the source.
Trace pageable_copies(CopyKind kind, std::uint64_t call_ns) {
  Trace t;
  kernel(t, 0, 100'000'000, "train");
  for (std::uint64_t i = 0; i < 10; ++i) {
    const std::uint64_t at = 1'000'000 + 5'000'000 * i;
    Memcpy c = copy(at + call_ns - 2'000, at + call_ns, kind, 4096, true, MemKind::Pageable);
    c.correlation = i + 1;
    t.memcpys.push_back(c);
    t.api_calls.push_back({.start_ns = at, .end_ns = at + call_ns, .name = t.intern("cudaMemcpyAsync"),
                           .correlation = i + 1});
  }
  t.sort_by_time();
  return t;
}

TEST(SeverityFollowsCost, PageableCopiesAreJudgedByTheHostTimeTheyHeld) {
  const auto cheap = only(detect(pageable_copies(CopyKind::HtoD, 10'000)), "GD009");
  ASSERT_EQ(cheap.size(), 1u);
  EXPECT_EQ(cheap[0].severity, Severity::Note);
  EXPECT_NE(cheap[0].message.find("held the host 100.0 us, 0.10% of the trace's 100.0 ms: below the 1%"),
            std::string::npos)
      << cheap[0].message;
  const auto costly = only(detect(pageable_copies(CopyKind::HtoD, 500'000)), "GD009");
  ASSERT_EQ(costly.size(), 1u);
  EXPECT_EQ(costly[0].severity, Severity::Warning);
  EXPECT_NE(costly[0].message.find("held the host 5.00 ms, 5.0% of the trace's"), std::string::npos)
      << costly[0].message;
  // A copy to the host waits in its call for the stream's earlier work: a
  // sync's cost, not the staging's.
  const auto waited = only(detect(pageable_copies(CopyKind::DtoH, 500'000)), "GD009");
  ASSERT_EQ(waited.size(), 1u);
  EXPECT_EQ(waited[0].severity, Severity::Note) << waited[0].message;
}

TEST(SeverityFollowsCost, ManyCheapSyncsAnIterationAreANoteAndACostlyOneAWarning) {
  Trace cheap = training_loop(10, 10'000);  // 1% of each step
  for (int s = 0; s < 10; ++s)
    for (int k = 1; k < 4; ++k)
      cheap.syncs.push_back({.start_ns = 1'000'000ull * s + 200'000ull * k, .end_ns = 1'000'000ull * s + 200'000ull * k + 1'000,
                             .kind = SyncKind::Device, .device = 0});
  cheap.sort_by_time();
  const auto noted = only(detect(cheap), "GD010");
  ASSERT_EQ(noted.size(), 1u);
  EXPECT_EQ(noted[0].severity, Severity::Note);
  EXPECT_NE(noted[0].message.find("below the 10% of the loop at which this is a warning (--sync-share)"),
            std::string::npos)
      << noted[0].message;
  const auto one_cheap = only(detect(training_loop(10, 10'000)), "GD010");
  EXPECT_TRUE(one_cheap.empty()) << "one cheap sync a step, as loss.item(): " << one_cheap.front().message;
  const auto costly = only(detect(training_loop(10, 300'000)), "GD010");
  ASSERT_EQ(costly.size(), 1u);
  EXPECT_EQ(costly[0].severity, Severity::Warning);
}

// One profiled step shows no loop whose every iteration waits.
TEST(SeverityFollowsCost, OneProfiledStepIsNoLoopToSyncIn) {
  Trace t = training_loop(1, 300'000);
  t.ranges.push_back({.start_ns = 0, .end_ns = 1'000'000, .name = t.intern("ProfilerStep#6")});
  EXPECT_TRUE(only(detect(t), "GD010").empty());
}

// A GPU idle while the host sits in a sync waits with it (for another
// rank's collective, say): that is no launch-bound idleness.
TEST(SeverityFollowsCost, IdlenessWhileTheHostWaitsInASyncIsNotLaunchBound) {
  Trace t;
  std::uint64_t id = 0;
  for (std::uint64_t step = 0; step < 50; ++step) {
    const std::uint64_t at = step * 1'000'000;
    for (std::uint64_t k = 0; k < 10; ++k) {
      kernel(t, at + 10'000 * k, at + 10'000 * k + 8'000, "tiny", 0, 7, ++id);
      t.api_calls.push_back({.start_ns = at + 10'000 * k - 5'000, .end_ns = at + 10'000 * k - 1'000,
                             .name = t.intern("cudaLaunchKernel"), .correlation = id});
    }
    t.api_calls.push_back({.start_ns = at + 100'000, .end_ns = at + 990'000, .name = t.intern("cudaStreamSynchronize")});
  }
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD011").empty()) << only(detect(t), "GD011").front().message;
  Trace launching = t;
  std::erase_if(launching.api_calls, [&](const ApiCall& a) { return launching.str(a.name) == "cudaStreamSynchronize"; });
  const auto f = only(detect(launching), "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("--idle-share"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
