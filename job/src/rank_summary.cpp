// summarize_rank: what the job report needs of one rank's analysed trace.
#include "gpudiag/job/rank_summary.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "gpudiag/analysis/temporal_breakdown.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/range_names.h"

namespace gpudiag {
namespace {

// Frames kept per collective or failure: enough to tell two call sites apart.
constexpr std::size_t kFramesKept = 6;

std::vector<Frame> top_frames(const Trace& trace, StackId stack) {
  std::vector<Frame> frames = frames_of(trace, stack);
  if (frames.size() > kFramesKept) frames.resize(kFramesKept);
  return frames;
}

// A ProfilerStep#N range's N, or -1.
std::int64_t profiler_step_number(std::string_view name) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return -1;
  std::int64_t n = 0;
  for (const char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9' || n > (std::int64_t{1} << 50)) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

class Clock {
 public:
  explicit Clock(const Trace& trace)
      : offset_(trace.job.epoch_offset_known ? trace.job.epoch_offset_ns : 0) {}
  std::uint64_t operator()(std::uint64_t trace_ns) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(trace_ns) + offset_);
  }

 private:
  std::int64_t offset_;
};

// The step a moment of the trace (its own clock) falls in: the profiler
// step's N, else the index of the loop's iteration; -1 outside them. The
// step a rank failed in is often the partial one the loop's iterations
// leave out, which its profiler step range still holds.
std::int64_t step_at(const Trace& trace, const Report& report, std::uint64_t t) {
  for (const Range& r : trace.ranges)
    if (r.start_ns <= t && t <= r.end_ns)
      if (const std::int64_t n = profiler_step_number(trace.str(r.name)); n >= 0) return n;
  const std::vector<Interval>& iterations = report.phases.host_iterations;
  for (std::size_t i = 0; i < iterations.size(); ++i)
    if (iterations[i].begin <= t && t < iterations[i].end) return static_cast<std::int64_t>(i);
  return -1;
}

std::optional<RankFailure> failure_of(const Trace& trace, const Report& report, const Clock& clock) {
  std::optional<RankFailure> first;
  const auto consider = [&](RankFailure f) {
    f.step = step_at(trace, report, f.time_ns);
    f.time_ns = clock(f.time_ns);
    if (!first || f.time_ns < first->time_ns) first = std::move(f);
  };
  if (!trace.crashes.empty()) {
    const Crash& c = trace.crashes.front();
    consider({.kind = "crash", .time_ns = c.time_ns, .what = describe_crash(trace, c), .step = -1,
              .stack = top_frames(trace, c.stack)});
  }
  if (!trace.ooms.empty()) {
    const OutOfMemory& o = trace.ooms.front();
    std::string what = fmt::format("out of memory asking for {} on {}", format_bytes(o.requested_bytes),
                                   trace.device_label(o.device));
    for (const Finding& f : report.findings)
      if (f.rule_id == rule_named("out-of-memory").id) {
        what = f.message;
        break;
      }
    consider({.kind = "out-of-memory", .time_ns = o.time_ns, .what = std::move(what), .step = -1,
              .stack = top_frames(trace, o.stack)});
  }
  for (const ApiCall& a : trace.api_calls)
    if (is_kernel_error(a.status)) {
      consider({.kind = "cuda-error", .time_ns = a.end_ns,
                .what = fmt::format("{} returned {}", trace.str(a.name), cuda_error_text(a.status)), .step = -1,
                .stack = top_frames(trace, a.stack)});
      break;
    }
  if (!first && trace.exit_status > 0)
    consider({.kind = "exit", .time_ns = trace.end_ns(), .what = fmt::format("exit status {}", trace.exit_status),
              .step = -1, .stack = {}});
  return first;
}

std::vector<RankCollective> collectives_of(const Trace& trace, const Clock& clock) {
  std::vector<RankCollective> out;
  out.reserve(trace.collectives.size());
  std::map<StringId, std::int64_t> next_in_group;
  for (const Collective& c : trace.collectives) {
    RankCollective r;
    r.op = std::string(trace.str(c.op));
    r.group = std::string(trace.str(c.group));
    const std::int64_t index = next_in_group[c.group]++;
    r.seq_from_source = c.seq != Collective::kNoSeq;
    r.seq = r.seq_from_source ? c.seq : index;
    r.bytes = c.bytes;
    r.begin_ns = clock(c.begin_ns);
    r.end_ns = clock(std::max(c.end_ns, c.begin_ns));
    r.unfinished = c.unfinished;
    r.stack = top_frames(trace, c.stack);
    out.push_back(std::move(r));
  }
  return out;
}

// Keeps each group's last calls; the ones before become signatures. The
// number dropped is a multiple of the signatures' spacing, so that the kept
// calls carry them on from the last one.
void drop_old_collectives(RankSummary& s, CollectiveWindow window) {
  const std::int64_t every = static_cast<std::int64_t>(std::max<std::size_t>(window.signature_every, 1));
  std::map<std::string, std::int64_t> to_drop;
  for (const RankCollective& c : s.collectives) ++to_drop[c.group];
  for (auto& [group, n] : to_drop) n = std::max<std::int64_t>(n - static_cast<std::int64_t>(window.kept), 0) / every * every;
  std::map<std::string, RankCollectivesDropped> dropped;
  std::map<std::string, std::uint64_t> signature;
  std::vector<RankCollective> last;
  for (RankCollective& c : s.collectives) {
    if (to_drop[c.group] == 0) {
      last.push_back(std::move(c));
      continue;
    }
    --to_drop[c.group];
    RankCollectivesDropped& d = dropped[c.group];
    d.group = c.group;
    d.every = every;
    std::uint64_t& sig = signature[c.group];
    sig = collective_signature(sig, c);
    if (++d.count % every == 0) d.signatures.push_back(sig);
  }
  s.collectives = std::move(last);
  for (auto& [group, d] : dropped) s.collectives_dropped.push_back(std::move(d));
}

std::vector<RankStep> steps_of(const Trace& trace, const Report& report, const Clock& clock) {
  const std::vector<Interval>& iterations = report.phases.host_iterations;
  std::vector<RankStep> steps;
  if (iterations.empty()) return steps;
  std::map<std::uint64_t, std::int64_t> numbers;  // a profiler step's start -> its N
  std::vector<Interval> loading, in_collectives;
  for (const Range& r : trace.ranges) {
    const std::string_view name = trace.str(r.name);
    if (const std::int64_t n = profiler_step_number(name); n >= 0) numbers.emplace(r.start_ns, n);
    if (is_data_loading_range(name)) loading.push_back({r.start_ns, r.end_ns});
  }
  for (const Collective& c : trace.collectives) in_collectives.push_back({c.begin_ns, std::max(c.end_ns, c.begin_ns)});
  loading = merge_intervals(std::move(loading));
  in_collectives = merge_intervals(std::move(in_collectives));
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const Interval& it = iterations[i];
    RankStep s;
    const auto n = numbers.find(it.begin);
    s.number = n != numbers.end() ? n->second : static_cast<std::int64_t>(i);
    s.begin_ns = clock(it.begin);
    s.end_ns = clock(it.end);
    s.collective_ns = length_within(in_collectives, it);
    s.data_loading_ns = length_within(loading, it);
    for (const GpuTime& g : report.gpu_time) s.gpu_busy_ns = std::max(s.gpu_busy_ns, length_within(g.busy, it));
    steps.push_back(s);
  }
  return steps;
}

}  // namespace

std::uint64_t RankSummary::peak_bytes() const {
  std::uint64_t peak = 0;
  for (const Peak& p : peaks) peak = std::max(peak, p.bytes);
  return peak;
}

std::string RankSummary::name() const {
  if (job.rank >= 0) return fmt::format("rank {}", job.rank);
  return std::filesystem::path(path).filename().string();
}

RankSummary summarize_rank(const Trace& trace, const Report& report, CollectiveWindow window) {
  const Clock clock(trace);
  RankSummary s;
  s.path = trace.path;
  s.source = std::string(to_string(trace.source));
  s.job = trace.job;
  s.pid = trace.pid;
  s.exit_status = trace.exit_status;
  s.clock = trace.job.epoch_offset_known ? "epoch" : "trace";
  s.clock_uncertainty_ns = trace.job.epoch_offset_uncertainty_ns;
  s.begin_ns = clock(trace.begin_ns());
  s.end_ns = clock(trace.end_ns());
  for (const SarifNotification& w : report_warnings(trace, report)) s.warnings.push_back(w.message);
  s.findings = report.findings;
  s.failure = failure_of(trace, report, clock);
  s.collectives = collectives_of(trace, clock);
  s.steps = steps_of(trace, report, clock);
  drop_old_collectives(s, window);
  for (const DeviceMemory& m : report.memory.devices)
    s.peaks.push_back({.device = m.device, .bytes = std::max(m.peak_bytes, m.peak_allocated_counter)});
  // Counted as HTA counts its temporal breakdown, so that a job's ranks read
  // the same here as in the tool people compare ranks with.
  for (const TemporalBreakdown& g : temporal_breakdown(trace))
    s.gpu_time.push_back({.device = g.device, .total_ns = g.window.length(), .idle_ns = g.idle_ns,
                          .computation_ns = g.compute_ns, .communication_ns = g.communication_ns,
                          .exposed_comm_ns = g.exposed_comm_ns, .memcpy_ns = g.memory_ns});
  return s;
}

// FNV-1a over the op, a separator and the size: the same calls in the same
// order give the same signature on every rank and host.
std::uint64_t collective_signature(std::uint64_t signature, const RankCollective& c) {
  constexpr std::uint64_t kPrime = 1099511628211ull, kBasis = 14695981039346656037ull;
  std::uint64_t h = signature ? signature : kBasis;
  const auto mix = [&](unsigned char byte) { h = (h ^ byte) * kPrime; };
  for (const char ch : c.op) mix(static_cast<unsigned char>(ch));
  mix(0);
  for (int shift = 0; shift < 64; shift += 8) mix(static_cast<unsigned char>(c.bytes >> shift));
  return h;
}

}  // namespace gpudiag
