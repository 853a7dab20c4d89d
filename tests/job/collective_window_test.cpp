// A rank's summary keeps each group's last collectives and signs the ones
// before, so that a run with millions of collectives has a small summary and
// a desync among the dropped calls is still found.
#include <gtest/gtest.h>

#include "gpudiag/job/job_report.h"
#include "gpudiag/job/rank_summary.h"

namespace gpudiag {
namespace {

constexpr CollectiveWindow kSmall{.kept = 8, .signature_every = 4};

// A rank's trace with `calls` all-reduces of 4 B on group "0", one every
// millisecond; `odd` (when >= 0) is of 4 MiB instead.
Trace rank_trace(int rank, int world, int calls, int odd = -1) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  t.job.rank = rank;
  t.job.world_size = world;
  const StringId op = t.intern("all_reduce"), group = t.intern("0");
  for (int i = 0; i < calls; ++i)
    t.collectives.push_back({.op = op, .group = group, .bytes = i == odd ? 4u << 20 : 4u,
                             .begin_ns = 1'000'000ull * i, .end_ns = 1'000'000ull * i + 500'000});
  return t;
}

std::vector<RankSummary> job(int world, int calls, int odd_rank, int odd_call, CollectiveWindow window = kSmall) {
  std::vector<RankSummary> ranks;
  for (int r = 0; r < world; ++r)
    ranks.push_back(summarize_rank(rank_trace(r, world, calls, r == odd_rank ? odd_call : -1), Report{}, window));
  return ranks;
}

TEST(CollectiveWindow, TheLastCallsOfEachGroupAreKeptAndTheOnesBeforeSigned) {
  Trace t = rank_trace(0, 1, 30);
  const StringId other = t.intern("1"), barrier = t.intern("barrier");
  for (int i = 0; i < 3; ++i) t.collectives.push_back({.op = barrier, .group = other, .begin_ns = 40'000'000ull + i});
  const RankSummary s = summarize_rank(t, Report{}, kSmall);
  // 30 - 8 = 22 could go; 20, the signatures' multiple, did.
  ASSERT_EQ(s.collectives.size(), 10u + 3u);
  EXPECT_EQ(s.collectives.front().seq, 20);
  EXPECT_EQ(s.collectives[9].seq, 29);
  ASSERT_EQ(s.collectives_dropped.size(), 1u) << "group 1 had too few to drop";
  EXPECT_EQ(s.collectives_dropped[0].group, "0");
  EXPECT_EQ(s.collectives_dropped[0].count, 20);
  EXPECT_EQ(s.collectives_dropped[0].signatures.size(), 5u);

  const RankSummary back = rank_summary_from_json(to_json(s));
  ASSERT_EQ(back.collectives_dropped.size(), 1u);
  EXPECT_EQ(back.collectives_dropped[0].signatures, s.collectives_dropped[0].signatures);
  EXPECT_EQ(back.collectives_dropped[0].every, 4);

  nlohmann::json bad = to_json(s);
  bad["collectives_dropped"][0]["signatures"][1] = "not hex";
  EXPECT_THROW(rank_summary_from_json(bad), std::runtime_error);
  bad = to_json(s);
  bad["collectives_dropped"][0]["count"] = 21;
  EXPECT_THROW(rank_summary_from_json(bad), std::runtime_error);
}

TEST(CollectiveWindow, ADesyncAmongTheDroppedCallsIsNamedByItsRange) {
  const JobReport report = merge_job(job(4, 30, 1, 6));
  ASSERT_TRUE(report.desync);
  EXPECT_EQ(report.desync->seq, 4);
  ASSERT_EQ(report.desync->sides.size(), 2u);
  EXPECT_EQ(report.desync->sides[0].ranks, (std::vector<std::int32_t>{0, 2, 3}));
  EXPECT_EQ(report.desync->sides[1].ranks, std::vector<std::int32_t>{1});
  EXPECT_NE(report.desync->message.find("differ between #4 and #7 of group 0"), std::string::npos)
      << report.desync->message;
}

TEST(CollectiveWindow, ADesyncAmongTheKeptCallsIsTheSameAsWithEveryCallKept) {
  const JobReport capped = merge_job(job(4, 30, 2, 25));
  const JobReport whole = merge_job(job(4, 30, 2, 25, {.kept = 1000, .signature_every = 4}));
  ASSERT_TRUE(whole.desync);
  ASSERT_TRUE(capped.desync);
  EXPECT_EQ(capped.desync->seq, 25);
  EXPECT_EQ(capped.desync->message, whole.desync->message);
}

TEST(CollectiveWindow, RanksThatStoppedAtDifferentCallsWithTheSameSequenceHaveNoDesync) {
  auto ranks = job(4, 30, -1, -1);
  Trace shorter = rank_trace(2, 4, 22);
  ranks[2] = summarize_rank(shorter, Report{}, kSmall);
  ASSERT_EQ(ranks[2].collectives.front().seq, 12) << "its kept calls start before the others'";
  const JobReport report = merge_job(std::move(ranks));
  EXPECT_FALSE(report.desync) << report.desync->message;
}

}  // namespace
}  // namespace gpudiag
