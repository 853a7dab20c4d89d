#include "gpudiag/report/load_and_analyze.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/import/allocator_history.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {
namespace {

// A .gdtrace in a regular file, not gzipped: the only trace that may be
// read in passes. (A pipe is never peeked at: its bytes would be gone.)
bool is_plain_gdtrace(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::ifstream file(path, std::ios::binary);
  char magic[7] = {};
  return file.read(magic, sizeof magic) && std::memcmp(magic, "GDTRACE", sizeof magic) == 0;
}

// The trace file and the segment files beside it (TRACE.1, TRACE.2, ...).
std::uint64_t trace_files_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::uint64_t bytes = fs::file_size(path, error);
  if (error) return 0;
  const fs::path p(path);
  const std::string prefix = p.filename().string() + ".";
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() && name.starts_with(prefix) &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      bytes += it->file_size(error);
  }
  return bytes;
}

std::uint64_t half_of_physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{8} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

// A trace's events take at most this many times their bytes on disk in a
// report: deflated events inflate about eightfold, then each becomes a
// decoded event, a share of each analysis's index, and a copy for the part
// the analysis judges.
constexpr std::uint64_t kReportBytesPerFileByte = 48;

// Rules that judge a run with a training loop over its loop alone.
constexpr std::string_view kJudgedOverTheLoop[] = {"launch-bound", "pageable-async-copy", "scalar-indexing",
                                                   "sync-in-loop"};

// What makes two findings of different passes the same, as it makes a
// bounded trace's kept findings the detail's (report.cpp): its rule and
// its stack, frame for frame.
std::string finding_key(const Finding& f) {
  std::string key = f.rule_id;
  for (const Frame& frame : f.stack)
    key += fmt::format("|{}|{}|{}:{}|{:x}", frame.function, frame.module, frame.file, frame.line, frame.address);
  return key;
}

}  // namespace

Report analyze_in_passes(GdtracePasses& passes, Trace& last, const DetectOptions& options,
                         const std::function<void(std::string_view)>& progress) {
  Report merged;
  std::map<std::int32_t, AnalysisPasses::Peak> peaks;
  struct Judged {
    std::vector<Finding> findings;
    bool loop = false;
  };
  std::vector<Judged> judged;
  std::size_t done = 0;
  std::uint64_t run_begin = 0;
  while (passes.next(last)) {
    ++done;
    if (progress) progress(fmt::format("pass {} of {}: {} events", done, passes.pass_count(), last.event_count()));
    if (done == 1) run_begin = last.begin_ns();
    Report r = analyze(last, options);
    // What a finding measured (counts, shares of the loop) is its pass's.
    const std::uint64_t from = passes.pass_begin_ns() - std::min(passes.pass_begin_ns(), run_begin);
    const std::uint64_t to = std::min(last.complete_until_ns, last.end_ns()) - run_begin;
    const std::string judged_in = fmt::format(
        "judged in pass {} of {}, on the events from {} to {} after the start of the trace (too big for memory, it "
        "was analysed in passes)",
        done, passes.pass_count(), format_duration(from), format_duration(to));
    for (Finding& f : r.findings) f.notes.push_back({.message = judged_in, .location = {}, .stack = {}});
    judged.push_back({std::move(r.findings), r.phases.has_loop()});
    for (const DeviceMemory& m : r.memory.devices) {
      AnalysisPasses::Peak& peak = peaks[m.device];
      peak.device = m.device;
      if (m.peak_bytes > peak.bytes) peak.bytes = m.peak_bytes, peak.time_ns = m.peak_ns;
    }
    merged.memory = std::move(r.memory);
    merged.gpu_time = std::move(r.gpu_time);
    merged.phases = std::move(r.phases);
  }
  // A run with a training loop has its patterns judged over the loop: a
  // pass without one (start-up, set-up) is judged for them as the whole
  // trace's start-up is, not at all.
  const bool run_has_loop = std::any_of(judged.begin(), judged.end(), [](const Judged& j) { return j.loop; });
  std::set<std::string> seen;
  for (Judged& j : judged)
    for (Finding& f : j.findings) {
      const Rule* rule = find_rule(f.rule_id);
      const bool over_the_loop =
          rule != nullptr && std::find(std::begin(kJudgedOverTheLoop), std::end(kJudgedOverTheLoop), rule->name) !=
                                 std::end(kJudgedOverTheLoop);
      if (run_has_loop && !j.loop && over_the_loop) continue;
      if (seen.insert(finding_key(f)).second) merged.findings.push_back(std::move(f));
    }
  std::stable_sort(merged.findings.begin(), merged.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.rule_id < b.rule_id; });
  AnalysisPasses p{.count = done,
                   .events = passes.event_count(),
                   .kernels = passes.events_of_kind(EventKind::Kernel),
                   .copies = passes.events_of_kind(EventKind::Memcpy),
                   .allocations = passes.events_of_kind(EventKind::Alloc),
                   .last_pass_from_ns = passes.pass_begin_ns(),
                   .earlier_peaks = {}};
  for (const auto& [device, peak] : peaks) {
    const DeviceMemory* last_pass = merged.memory.device(device);
    if (last_pass == nullptr || peak.bytes > last_pass->peak_bytes) p.earlier_peaks.push_back(peak);
  }
  merged.passes = std::move(p);
  // The report shows the trace as it was recorded, not as a pass of it.
  last.detail_from_ns = passes.definitions().detail_from_ns;
  last.complete_until_ns = passes.definitions().complete_until_ns;
  return merged;
}

namespace {

// PyTorch's snapshot at an out-of-memory, which the Python hook wrote beside
// the trace as the request failed: its GD008 says who held the memory, by
// Python line, in PyTorch's terms, where the CUDA calls show only the
// caching allocator's segments. It replaces the trace's own GD008 on the
// same device, whose words stay as a note; a snapshot with no failure the
// trace shows (one an earlier run left) is not this run's and changes
// nothing. An unreadable snapshot is a warning of the report.
void explain_out_of_memory_from_snapshot(AnalysedTrace& a, const std::string& path, const DetectOptions& options) {
  if (a.trace.source != TraceSource::Gdtrace) return;
  const std::string snapshot_path = import::out_of_memory_snapshot_path(path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(snapshot_path, ec)) return;
  const std::string_view rule = rule_named("out-of-memory").id;
  auto& findings = a.report.findings;
  // The trace's own findings of a failure on a device the snapshot failed on.
  std::set<std::string> devices;
  std::vector<Finding> explained;
  try {
    const Trace snapshot = load_trace(snapshot_path);
    for (const OutOfMemory& o : snapshot.ooms) devices.insert("out of memory on " + a.trace.device_label(o.device) + ":");
    const MemoryTimeline memory = build_memory_timeline(snapshot);
    const std::vector<GpuTime> no_gpu_time;
    const RunPhases phases = find_phases(snapshot);
    const std::string_view rules[] = {"out-of-memory"};
    explained = run_detectors({snapshot, memory, no_gpu_time, options, phases}, rules);
  } catch (const std::exception& e) {  // TraceError, or a snapshot that is no snapshot
    a.report.out_of_memory_snapshot_note = e.what();
    return;
  }
  const auto replaced = [&](const Finding& f) {
    return f.rule_id == rule && std::any_of(devices.begin(), devices.end(), [&](const std::string& d) {
             return f.message.starts_with(d);
           });
  };
  std::vector<std::string> cuda_view;
  for (const Finding& f : findings)
    if (replaced(f)) cuda_view.push_back(f.message);
  if (explained.empty() || cuda_view.empty()) return;
  const std::ptrdiff_t place =
      std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.rule_id >= rule; }) -
      findings.begin();
  std::erase_if(findings, replaced);
  for (Finding& f : explained) {
    f.notes.push_back({fmt::format("from PyTorch's allocator snapshot at the out-of-memory, {}", snapshot_path), {}, {}});
    for (const std::string& m : cuda_view) f.notes.push_back({"as the CUDA calls show it: " + m, {}, {}});
  }
  findings.insert(findings.begin() + std::min<std::ptrdiff_t>(place, static_cast<std::ptrdiff_t>(findings.size())),
                  std::make_move_iterator(explained.begin()), std::make_move_iterator(explained.end()));
}

}  // namespace

AnalysedTrace load_and_analyze(const std::string& path, const LoadOptions& options) {
  const std::uint64_t memory = options.memory_bytes != 0 ? options.memory_bytes : half_of_physical_memory();
  const auto whole = [&] {
    AnalysedTrace a{load_trace(path), {}};
    // Stacks recorded as bare addresses get function, file and line while the binaries are still here.
    if (a.trace.source == TraceSource::Gdtrace) symbolize(a.trace);
    if (options.progress) options.progress(fmt::format("loaded {} events; analysing", a.trace.event_count()));
    a.report = analyze(a.trace, options.detect);
    explain_out_of_memory_from_snapshot(a, path, options.detect);
    return a;
  };
  if (!is_plain_gdtrace(path) || trace_files_bytes(path) * kReportBytesPerFileByte <= memory) return whole();
  GdtracePasses passes(path, memory / kReportBytesPerEvent);
  if (passes.pass_count() == 1) return whole();
  if (options.progress)
    options.progress(fmt::format("{} events need more than {} of memory: analysing in {} passes", passes.event_count(),
                                 format_bytes(memory), passes.pass_count()));
  symbolize(passes.definitions());
  AnalysedTrace a;
  a.report = analyze_in_passes(passes, a.trace, options.detect, options.progress);
  explain_out_of_memory_from_snapshot(a, path, options.detect);
  return a;
}

}  // namespace gpudiag
