// A trace bounded at a tenth of its size (gpudiag trace --max-size), or at
// the smallest bound it takes, gives the findings of the whole trace: every real trace of the repository and
// of ../shared/data, through the writer's bound, which drops and keeps what
// the recorder's does.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "segment_ring.h"
#include "test_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;

// What a finding is, apart from what it measured: its rule and where it
// points (its innermost frame's address). Shares of time and counts are
// the detail window's, so a severity that follows a share may differ (a
// loop whose first steps synchronised most).
using Key = std::pair<std::string, std::uint64_t>;

std::set<Key> findings_of(const Trace& t) {
  std::set<Key> keys;
  for (const Finding& f : analyze(t).findings) keys.insert({f.rule_id, f.stack.empty() ? 0 : f.stack.front().address});
  return keys;
}

std::string describe(const std::set<Key>& keys) {
  std::string s;
  for (const auto& [rule, address] : keys) s += " " + rule + "@" + std::to_string(address);
  return s.empty() ? " (none)" : s;
}

std::vector<std::string> real_gdtraces() {
  std::vector<std::string> paths;
  for (const std::string& root : {std::string(GPUDIAG_SOURCE_DIR) + "/tests/data", std::string(GPUDIAG_SHARED_DATA_DIR)}) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".gdtrace") || name.ends_with(".gdtrace.gz")) paths.push_back(e.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

class BoundedFindings : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundedFindings, AtATenthOfItsSizeAreThoseOfTheWholeTrace) {
  const std::string path = GetParam();
  const fs::path dir = test::temp_path("bounded-" + fs::path(path).filename().string());
  fs::create_directories(dir);
  const std::string whole = (dir / "whole.gdtrace").string(), bounded = (dir / "bounded.gdtrace").string();
  const Trace original = load_trace(path);
  write_gdtrace(original, whole);
  // A trace under 10 MiB is bounded at the smallest bound gpudiag trace
  // takes instead (its keep file's definitions, and a loop's iterations).
  const std::uint64_t bound = std::max<std::uint64_t>(fs::file_size(whole) / 10, gdtrace::SegmentRing::kMinBytes);
  write_gdtrace(original, bounded, bound);
  const Trace full = read_gdtrace(whole), cut = read_gdtrace(bounded);
  EXPECT_FALSE(cut.truncated) << cut.truncation_note;
  const std::set<Key> expected = findings_of(full), got = findings_of(cut);
  EXPECT_EQ(got, expected) << path << " bounded at " << bound << " bytes (whole: " << fs::file_size(whole)
                           << ", detail from " << cut.detail_from_ns << ")\nwhole:  " << describe(expected)
                           << "\nbounded:" << describe(got);
}

// The same trace between two long healthy loops: what the real trace shows
// is in the part that a tenth of the size drops (the first loop stays in
// the trace file itself, the newest detail is the second loop). A finding
// that stands on single events (a host pointer given to a kernel, a failed
// call, an out-of-memory) is kept; one on a pattern or an ordering of
// events there is not judged, and none is made up.
TEST_P(BoundedFindings, OfAnEarlyBugFollowedByALongLoopAreThoseOfTheWholeTrace) {
  const std::string path = GetParam();
  const fs::path dir = test::temp_path("bounded-early-" + fs::path(path).filename().string());
  fs::create_directories(dir);
  const std::string whole = (dir / "whole.gdtrace").string(), bounded = (dir / "bounded.gdtrace").string();
  Trace run = load_trace(path);
  if (run.source != TraceSource::Gdtrace || run.event_count() > 100'000) GTEST_SKIP() << "a long trace already";
  const std::uint64_t begin = run.begin_ns(), end = run.end_ns();
  ASSERT_GT(begin, 2'000'000'000u);
  testing::append_training_loop(run, 1000, 0, begin - 1'500'000'000);
  testing::append_training_loop(run, 3000, 0, end + 1'000'000'000);
  run.sort_by_time();
  write_gdtrace(run, whole);
  const std::uint64_t bound = fs::file_size(whole) / 10;
  write_gdtrace(run, bounded, bound);
  const Trace full = read_gdtrace(whole), cut = read_gdtrace(bounded);
  ASSERT_TRUE(cut.bounded()) << "bounded at " << bound << " of " << fs::file_size(whole);
  ASSERT_GT(cut.detail_from_ns, end) << "the real trace's part must be dropped";
  ASSERT_LT(cut.kernels.front().start_ns, begin) << "the first loop stays in the trace file";
  const std::set<Key> expected = findings_of(full), got = findings_of(cut);
  EXPECT_FALSE(expected.empty()) << path << ": the whole trace must have findings for this to test anything";
  const auto on_single_events = [](const std::set<Key>& keys) {
    std::set<Key> out;
    for (const Key& k : keys)
      if (k.first == "GD001" || k.first == "GD006" || k.first == "GD008") out.insert(k);
    return out;
  };
  EXPECT_EQ(on_single_events(got), on_single_events(expected))
      << path << " then a loop, bounded at " << bound << " bytes\nwhole:  " << describe(expected)
      << "\nbounded:" << describe(got);
  EXPECT_TRUE(std::includes(expected.begin(), expected.end(), got.begin(), got.end()))
      << "a finding the whole trace does not have\nwhole:  " << describe(expected) << "\nbounded:" << describe(got);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).filename().string();
  name = name.substr(0, name.find('.'));
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(RealTraces, BoundedFindings, ::testing::ValuesIn(real_gdtraces()), test_name);

}  // namespace
}  // namespace gpudiag
