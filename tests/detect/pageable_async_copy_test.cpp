// GD009 pageable-async-copy: asynchronous copies whose host side is
// pageable, from the training loop, judged by the host time they held.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(PageableAsyncCopy, AsyncCopiesFromPageableMemoryAreReported) {
  Trace t;
  for (int i = 0; i < 3; ++i) t.memcpys.push_back(copy(100 * i, 100 * i + 50, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.memcpys.push_back(copy(1000, 1050, CopyKind::HtoD, 1 << 20, true, MemKind::Pinned));     // pinned: fine
  t.memcpys.push_back(copy(2000, 2050, CopyKind::DtoH, 1 << 20, false, MemKind::Pageable));  // sync copy: fine
  const auto f = only(detect(t), "GD009");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.rfind("3 asynchronous HtoD copies (3.00 MiB", 0), 0u) << f[0].message;
}

TEST(PageableAsyncCopy, TheCopiesOfSettingUpAreNotJudged) {
  Trace t = training_loop(10, 0, 5'000'000);
  for (int i = 0; i < 100; ++i)
    t.memcpys.push_back(copy(1000 + 1000 * i, 1000 + 1000 * i + 500, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD009").empty()) << "model.to(device) before the loop";
  t.memcpys.push_back(copy(6'000'000, 6'000'500, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.sort_by_time();
  EXPECT_EQ(only(detect(t), "GD009").size(), 1u) << "a batch copied from pageable memory in the loop";
}

// SeverityFollowsCost: below its rule's threshold (an option of `gpudiag report`)
// a finding is a note or nothing, and its message names the threshold.

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

}  // namespace
}  // namespace gpudiag
