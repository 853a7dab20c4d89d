// A trace too big for the memory a report may take is analysed in passes
// (gpudiag/gdtrace_passes.h, report/load_and_analyze.h): every event is in
// exactly one pass, memory stays that of one pass, and the findings are
// the whole trace's; a file that changes between passes is an error, not
// a crash.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpudiag/gdtrace_passes.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/load_and_analyze.h"
#include "gpudiag/trace_io.h"
#include "repeated_loop.h"
#include "run_command.h"
#include "segment_ring.h"
#include "test_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using namespace gpudiag::testing;

constexpr std::uint64_t kWhole = std::uint64_t{1} << 40;  // memory enough for any test trace

// A rule and where it points (its innermost frame's address): what a
// finding is, apart from the counts and shares of the span it measured.
using Key = std::pair<std::string, std::uint64_t>;

std::set<Key> keys_of(const Report& r) {
  std::set<Key> keys;
  for (const Finding& f : r.findings) keys.insert({f.rule_id, f.stack.empty() ? 0 : f.stack.front().address});
  return keys;
}

std::string describe(const std::set<Key>& keys) {
  std::string s;
  for (const auto& [rule, address] : keys) s += " " + rule + "@" + std::to_string(address);
  return s.empty() ? " (none)" : s;
}

AnalysedTrace analysed_with(const std::string& path, std::uint64_t memory) {
  LoadOptions o;
  o.memory_bytes = memory;
  return load_and_analyze(path, o);
}

// Memory for passes of about `events` events each.
std::uint64_t memory_for_passes_of(std::uint64_t events) { return events * kReportBytesPerEvent; }

std::string recording(const std::string& name) {
  return std::string(GPUDIAG_SHARED_DATA_DIR) + "/gpu/h100-torch-unet-" + name + ".gdtrace.gz";
}

// A training loop of 1 ms steps; from step `leak_from` on, each step keeps
// 64 KiB it never frees, allocated at `leaky`.
std::string loop_trace(const std::string& name, int steps, int leak_from) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  const StackId leaky = stack_named(t, "cache_activations", "train.cpp", 41);
  const StackId scratch = stack_named(t, "scratch", "train.cpp", 12);
  append_training_loop(t, steps, 0, 1'000'000);
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t base = 1'000'000 + 1'000'000ull * s;
    alloc(t, base + 1'000, 0x7000000000 + 0x100000ull * (s % 8), 1 << 20, 0, scratch);
    free_at(t, base + 900'000, 0x7000000000 + 0x100000ull * (s % 8));
    if (s >= leak_from) alloc(t, base + 2'000, 0x9000000000 + 0x10000ull * s, 1 << 16, 0, leaky);
  }
  t.sort_by_time();
  const std::string path = test::temp_path(name + ".gdtrace");
  write_gdtrace(t, path);
  return path;
}

class RealRecordings : public ::testing::TestWithParam<std::string> {};

// The recording with its loop repeated four times, in passes of about
// 60,000 events (a tenth of it): the findings of the whole trace, each once.
TEST_P(RealRecordings, InPassesGiveTheFindingsOfTheWholeTrace) {
  const std::string source = recording(GetParam());
  if (!fs::exists(source)) GTEST_SKIP() << source << " is not here";
  const std::string path = test::temp_path("repeated-" + GetParam() + ".gdtrace");
  const RepeatedLoop made = write_repeated_loop(load_trace(source), path, kWhole, 4);
  ASSERT_EQ(made.copies, 4u);
  const AnalysedTrace whole = analysed_with(path, kWhole);
  ASSERT_FALSE(whole.report.passes) << "memory enough for the whole trace is no reason for passes";
  const AnalysedTrace passes = analysed_with(path, memory_for_passes_of(60'000));
  ASSERT_TRUE(passes.report.passes);
  EXPECT_GE(passes.report.passes->count, 8u);
  EXPECT_EQ(passes.report.passes->events, whole.trace.event_count());
  EXPECT_EQ(passes.report.passes->kernels, whole.trace.kernels.size());
  const std::set<Key> expected = keys_of(whole.report), got = keys_of(passes.report);
  EXPECT_FALSE(expected.empty()) << "the whole trace must have findings for this to test anything";
  EXPECT_EQ(got, expected) << "whole: " << describe(expected) << "\npasses:" << describe(got);
  EXPECT_EQ(got.size(), passes.report.findings.size()) << "each finding once, not once per pass";
  for (const Finding& f : passes.report.findings)
    EXPECT_NE(f.notes.back().message.find("judged in pass"), std::string::npos) << f.message;
}

INSTANTIATE_TEST_SUITE_P(H100, RealRecordings, ::testing::Values("healthy", "pageable_async", "sync_in_loop"));

TEST(Passes, HoldEveryEventOnceAndWhatWasKeptOfTheSpansBefore) {
  const std::string source = recording("pageable_async");
  if (!fs::exists(source)) GTEST_SKIP() << source << " is not here";
  const std::string path = test::temp_path("every-event.gdtrace");
  write_repeated_loop(load_trace(source), path, kWhole, 3);
  const Trace whole = read_gdtrace(path);
  GdtracePasses passes(path, 50'000);
  ASSERT_GE(passes.pass_count(), 5u);
  EXPECT_EQ(passes.event_count(), whole.event_count());
  EXPECT_TRUE(passes.definitions().kernels.empty()) << "the index holds no events";
  EXPECT_EQ(passes.definitions().stacks.size(), whole.stacks.size());
  std::size_t kernels = 0, api_calls = 0, allocs = 0;
  std::size_t kept_in_second = 0, kept_in_last = 0, largest = 0, pass_number = 0;
  Trace pass;
  while (passes.next(pass)) {
    ++pass_number;
    const std::uint64_t begin = passes.pass_begin_ns();
    ASSERT_TRUE(pass.bounded());
    EXPECT_EQ(pass.detail_from_ns, std::max<std::uint64_t>(begin, 1));
    std::size_t detail = 0, kept = 0;
    pass.for_each_event_column([&](const auto& column) {
      for (const auto& e : column) (start_of(e) >= pass.detail_from_ns ? detail : kept) += 1;
    });
    for (const Kernel& k : pass.kernels) kernels += k.start_ns >= pass.detail_from_ns;
    for (const ApiCall& a : pass.api_calls) api_calls += a.start_ns >= pass.detail_from_ns;
    for (const Alloc& a : pass.allocs) allocs += a.time_ns >= pass.detail_from_ns;
    largest = std::max(largest, detail);
    if (pass_number == 2) kept_in_second = kept;
    kept_in_last = kept;
    EXPECT_EQ(pass_number == passes.pass_count(), pass.complete()) << "a pass before the last is whole only to its end";
  }
  EXPECT_EQ(pass_number, passes.pass_count());
  EXPECT_EQ(kernels, whole.kernels.size());
  EXPECT_EQ(api_calls, whole.api_calls.size());
  EXPECT_EQ(allocs, whole.allocs.size());
  EXPECT_LT(largest, 50'000u + 40'000u) << "a pass is its share, give or take the chunks that straddle its ends";
  EXPECT_GT(kept_in_second, 0u);
  EXPECT_LT(kept_in_last, kept_in_second * 3 / 2 + 1'000) << "what is kept does not grow with the run";
}

// Growth that starts well into the run, passes after the first: GD007
// with its stack, as in the whole trace.
TEST(Passes, ALeakThatStartsLateIsFoundWithItsStack) {
  const std::string path = loop_trace("late-leak", 4000, 1500);
  const AnalysedTrace whole = analysed_with(path, kWhole);
  const AnalysedTrace passes = analysed_with(path, memory_for_passes_of(10'000));
  ASSERT_TRUE(passes.report.passes);
  EXPECT_GE(passes.report.passes->count, 6u);
  const auto leak = [](const Report& r) {
    for (const Finding& f : r.findings)
      if (f.rule_id == "GD007") return f.stack.empty() ? std::uint64_t{1} : f.stack.front().address;
    return std::uint64_t{0};
  };
  ASSERT_EQ(leak(whole.report), 0x1000u + 41) << describe(keys_of(whole.report));
  EXPECT_EQ(leak(passes.report), 0x1000u + 41) << describe(keys_of(passes.report));
  EXPECT_EQ(keys_of(passes.report), keys_of(whole.report));
}

// Without the leak, passes make up none: no growth, and nothing live at
// the end of a pass is called leaked, since the run goes on.
TEST(Passes, AHealthyLoopHasNoFindingInAnyPass) {
  const std::string path = loop_trace("healthy-loop", 4000, 4000);
  const AnalysedTrace passes = analysed_with(path, memory_for_passes_of(10'000));
  ASSERT_TRUE(passes.report.passes);
  EXPECT_EQ(describe(keys_of(passes.report)), describe(keys_of(analysed_with(path, kWhole).report)));
  EXPECT_TRUE(std::none_of(passes.report.findings.begin(), passes.report.findings.end(),
                           [](const Finding& f) { return f.rule_id == "GD007"; }));
}

// The peak of live memory in an earlier pass is said, not lost with it.
TEST(Passes, SayAHigherPeakOfAnEarlierPass) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  append_training_loop(t, 3000, 0, 1'000'000);
  alloc(t, 5'000'000, 0x8000000000, std::uint64_t{3} << 30, 0, stack_named(t, "warmup_buffer"));
  free_at(t, 6'000'000, 0x8000000000);
  t.sort_by_time();
  const std::string path = test::temp_path("early-peak.gdtrace");
  write_gdtrace(t, path);
  const AnalysedTrace passes = analysed_with(path, memory_for_passes_of(10'000));
  ASSERT_TRUE(passes.report.passes);
  ASSERT_EQ(passes.report.passes->earlier_peaks.size(), 1u);
  EXPECT_EQ(passes.report.passes->earlier_peaks[0].bytes, std::uint64_t{3} << 30);
  bool said = false;
  for (const SarifNotification& w : report_warnings(passes.trace, passes.report))
    said = said || (w.id == "analysed-in-passes" && w.message.find("3.00 GiB") != std::string::npos);
  EXPECT_TRUE(said);
}

// A file cut short is judged in passes as it is whole: up to where every
// thread's events are present, with the same warnings.
TEST(Passes, OfATraceCutShortAreJudgedAsTheWholeTraceIs) {
  const std::string path = loop_trace("cut", 4000, 1000);
  fs::resize_file(path, fs::file_size(path) * 3 / 4);
  const AnalysedTrace whole = analysed_with(path, kWhole);
  const AnalysedTrace passes = analysed_with(path, memory_for_passes_of(10'000));
  ASSERT_TRUE(passes.report.passes);
  EXPECT_TRUE(passes.trace.truncated);
  EXPECT_EQ(passes.trace.complete_until_ns, whole.trace.complete_until_ns);
  EXPECT_EQ(keys_of(passes.report), keys_of(whole.report));
  std::set<std::string> whole_ids, passes_ids;
  for (const auto& w : report_warnings(whole.trace, whole.report)) whole_ids.insert(w.id);
  for (const auto& w : report_warnings(passes.trace, passes.report)) passes_ids.insert(w.id);
  passes_ids.erase("analysed-in-passes");
  EXPECT_EQ(passes_ids, whole_ids);
}

// A bounded trace (--max-size) is read in passes across its segment files,
// with what its trace file kept of the segments it dropped.
TEST(Passes, OfABoundedTraceFollowItsSegmentFiles) {
  Trace t = read_gdtrace(loop_trace("to-bound", 12000, 4000));
  const std::string path = test::temp_path("bounded.gdtrace");
  write_gdtrace(t, path, gdtrace::SegmentRing::kMinBytes);
  const Trace whole = read_gdtrace(path);
  ASSERT_TRUE(whole.bounded());
  ASSERT_GT(test::bytes_of_files_starting_with(fs::path(path).parent_path(), fs::path(path).filename().string() + "."), 0u)
      << "the trace must have segment files for this to test anything";
  GdtracePasses passes(path, 10'000);
  EXPECT_EQ(passes.event_count(), whole.event_count());
  EXPECT_EQ(passes.definitions().detail_from_ns, whole.detail_from_ns);
  const AnalysedTrace in_passes = analysed_with(path, memory_for_passes_of(10'000));
  ASSERT_TRUE(in_passes.report.passes);
  EXPECT_TRUE(in_passes.trace.bounded()) << "the report's trace is the bounded trace, as recorded";
  EXPECT_EQ(keys_of(in_passes.report), keys_of(analysed_with(path, kWhole).report));
}

TEST(Passes, OfAFileThatChangedSinceItWasIndexedAreAnErrorNotACrash) {
  const std::string path = loop_trace("changed", 2000, 2000);
  {
    GdtracePasses passes(path, 5'000);
    ASSERT_GE(passes.pass_count(), 3u);
    fs::resize_file(path, fs::file_size(path) / 2);
    Trace pass;
    EXPECT_THROW(while (passes.next(pass)) {}, TraceError);
  }
  const std::string rewritten = loop_trace("rewritten", 2000, 2000);
  GdtracePasses passes(rewritten, 5'000);
  {
    // Same size, other bytes: a chunk's checksum no longer holds.
    std::fstream f(rewritten, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(rewritten) / 2));
    const std::string garbage(4096, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  Trace pass;
  EXPECT_THROW(while (passes.next(pass)) {}, TraceError);
}

TEST(Passes, AreNotForWhatIsNoPlainGdtrace) {
  const std::string source = recording("healthy");
  if (!fs::exists(source)) GTEST_SKIP() << source << " is not here";
  // Gzipped, the trace is read whole however little memory is given.
  const AnalysedTrace gz = analysed_with(source, memory_for_passes_of(1'000));
  EXPECT_FALSE(gz.report.passes);
  EXPECT_THROW(GdtracePasses(source, 1'000), TraceError);
  const std::string garbage = test::temp_path("garbage.gdtrace");
  std::ofstream(garbage) << "GDTRACE but not really";
  EXPECT_THROW(GdtracePasses(garbage, 1'000), TraceError);
}

TEST(ReportCommand, TakesAMemoryBoundAndSaysWhenItAnalysedInPasses) {
  const std::string path = loop_trace("cli", 4000, 3000);
  const test::CommandResult passes = test::run_command(fmt::format("{} report --no-color --fail-on warning --memory 4M {}", GPUDIAG_EXE, path));
  EXPECT_EQ(passes.status, 1) << passes.out;  // the leak is a warning
  EXPECT_NE(passes.out.find("so the report judged them in"), std::string::npos) << passes.out;
  EXPECT_NE(passes.out.find("GD007"), std::string::npos) << passes.out;
  const test::CommandResult bad = test::run_command(fmt::format("{} report --memory lots {}", GPUDIAG_EXE, path));
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--memory"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace gpudiag
