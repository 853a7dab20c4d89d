#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/load_and_analyze.h"
#include "gpudiag/report/report.h"

namespace gpudiag {

namespace {

Report analyze_events(const Trace& trace, const DetectOptions& options) {
  Report r;
  r.memory = build_memory_timeline(trace);
  r.phases = find_phases(trace);
  // Start-up (module loading, autotuning) is not idleness: a run with a
  // training loop is broken down over the loop, as the GPU ran it. Where the
  // loop holds all of the GPU's work (a profile of one step), that is the
  // whole run's breakdown, and said so.
  r.gpu_time = gpu_time_breakdown(trace);
  if (r.phases.has_loop()) {
    auto loop = gpu_time_breakdown(trace, r.phases.gpu_steady());
    const bool leaves_out = loop.size() != r.gpu_time.size() ||
                            std::any_of(loop.begin(), loop.end(), [](const GpuTime& g) {
                              return g.before_window_ns > 0 || g.after_window_ns > 0;
                            });
    if (leaves_out) r.gpu_time = std::move(loop);
  }
  const DetectContext ctx{trace, r.memory, r.gpu_time, options, r.phases};
  r.findings = run_detectors(ctx);
  return r;
}

// Rules whose every finding stands on events a bounded trace keeps from the
// part it dropped, without the events around them: a host pointer given to
// a kernel, a call that failed, an out-of-memory with what was live then.
constexpr std::string_view kStandOnKeptEvents[] = {"device-mismatch", "unchecked-cuda-error", "out-of-memory"};

// A bounded trace (--max-size) is judged where it has every event, its
// detail; what it kept of the part it dropped adds only the findings that
// stand on such events alone. Patterns and orderings there (a share of the
// loop, a free before its sync) are not judged: their other events are gone.
Report analyze_bounded(const Trace& trace, const DetectOptions& options) {
  Report r = analyze_events(trace.detailed_part(), options);
  const MemoryTimeline memory = build_memory_timeline(trace);
  const DetectContext whole{trace, memory, r.gpu_time, options, r.phases};
  const std::string_view unchecked_error = find_rule_named("unchecked-cuda-error")->id;
  for (Finding f : run_detectors(whole, kStandOnKeptEvents)) {
    const bool already = std::any_of(r.findings.begin(), r.findings.end(), [&f](const Finding& g) {
      return g.rule_id == f.rule_id && g.stack == f.stack;
    });
    if (already) continue;
    // Notes that list what else happened around the event (the launches
    // since the last sync before a kernel error) stand on events not kept.
    if (f.rule_id == unchecked_error) f.notes.clear();
    r.findings.push_back(std::move(f));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.rule_id < b.rule_id; });
  return r;
}

Report analyze_judged(const Trace& trace, const DetectOptions& options) {
  return trace.bounded() ? analyze_bounded(trace, options) : analyze_events(trace, options);
}

}  // namespace

Report analyze(const Trace& trace, const DetectOptions& options) {
  // The rule for incomplete evidence: a trace that lacks its end is judged
  // on the part whose every thread's events are present, so that no finding
  // stands on the absence of an event the cut took (a free, a sync, an
  // allocation that reused the memory). Columns are in time order: what is
  // left out is each one's tail, and indexes into the part hold for the trace.
  if (!trace.complete()) return analyze_judged(trace.whole_part(), options);
  return analyze_judged(trace, options);
}

std::vector<std::vector<const Finding*>> findings_by_rule(const Report& report) {
  std::vector<std::vector<const Finding*>> groups;
  std::map<std::string_view, std::size_t> group_of;
  for (const Finding& f : report.findings) {
    auto [it, fresh] = group_of.try_emplace(f.rule_id, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&f);
  }
  // A rule's findings share its severity, the one each form shows beside the rule.
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    const Severity sa = a.front()->severity, sb = b.front()->severity;
    return sa != sb ? sa > sb : a.front()->rule_id < b.front()->rule_id;
  });
  return groups;
}

std::string gpu_time_span(const GpuTime& g) {
  if (!g.windowed) return format_duration(g.total_ns) + " from first to last GPU activity";
  std::string span = "the training loop's " + format_duration(g.total_ns);
  std::vector<std::string> outside;
  if (g.before_window_ns) outside.push_back(fmt::format("the {} of start-up before it", format_duration(g.before_window_ns)));
  if (g.after_window_ns) outside.push_back(fmt::format("the {} after it", format_duration(g.after_window_ns)));
  if (!outside.empty()) span += ", not " + fmt::format("{}", fmt::join(outside, " or "));
  return span;
}

nlohmann::json gpu_time_json(const GpuTime& g) {
  return {{"device", g.device},           {"begin_ns", g.begin_ns},
          {"end_ns", g.end_ns},           {"total_ns", g.total_ns},
          {"busy_ns", g.busy_ns},         {"idle_ns", g.idle_ns},
          {"computation_ns", g.computation_ns}, {"kernel_ns", g.kernel_ns},
          {"memcpy_ns", g.memcpy_ns},     {"memset_ns", g.memset_ns},
          {"communication_ns", g.communication_ns}, {"exposed_comm_ns", g.exposed_comm_ns},
          {"exposed_memcpy_ns", g.exposed_memcpy_ns}, {"kernels", g.kernels},
          {"memcpys", g.memcpys},         {"memsets", g.memsets},
          {"window", g.windowed ? "training loop" : "whole run"}, {"span", gpu_time_span(g)},
          {"before_window_ns", g.before_window_ns}, {"after_window_ns", g.after_window_ns}};
}

nlohmann::json warnings_json(const Trace& trace, const Report& report) {
  nlohmann::json out = nlohmann::json::array();
  for (const SarifNotification& w : report_warnings(trace, report)) out.push_back({{"id", w.id}, {"message", w.message}});
  return out;
}

namespace {

// The job's collectives in sum, per collective and process group: how many,
// their bytes (of those that say them) and their time, from the calls to
// their ends (an unfinished one's up to the trace's end). The collectives
// themselves are the trace's, too many to list here.
nlohmann::json collectives_json(const Trace& trace) {
  struct Sum {
    std::size_t count = 0, unfinished = 0, with_bytes = 0;
    std::uint64_t bytes = 0, total_ns = 0;
  };
  std::map<std::pair<std::string_view, std::string_view>, Sum> sums;
  Sum all;
  for (const Collective& c : trace.collectives) {
    for (Sum* s : {&sums[{trace.str(c.op), trace.str(c.group)}], &all}) {
      ++s->count;
      s->unfinished += c.unfinished;
      s->with_bytes += c.bytes != 0;
      s->bytes += c.bytes;
      s->total_ns += c.end_ns - c.begin_ns;
    }
  }
  const auto fields = [](const Sum& s) {
    return nlohmann::json{{"count", s.count}, {"unfinished", s.unfinished}, {"bytes", s.bytes},
                          {"with_bytes", s.with_bytes}, {"total_ns", s.total_ns}};
  };
  nlohmann::json by_op = nlohmann::json::array();
  for (const auto& [key, sum] : sums) {
    nlohmann::json entry = {{"op", key.first.empty() ? "unknown" : key.first},
                            {"group", key.second.empty() ? nlohmann::json() : nlohmann::json(key.second)}};
    entry.update(fields(sum));
    by_op.push_back(std::move(entry));
  }
  nlohmann::json j = fields(all);
  j["by_op"] = std::move(by_op);
  return j;
}

}  // namespace

nlohmann::json report_json(const Trace& trace, const Report& report) {
  nlohmann::json j;
  j["trace"] = {{"path", trace.path},
                {"source", std::string(to_string(trace.source))},
                {"events", report.passes ? report.passes->events : trace.event_count()},
                {"begin_ns", trace.begin_ns()},
                {"end_ns", trace.end_ns()},
                {"dropped_events", trace.dropped_events},
                {"truncated", trace.truncated},
                {"truncation_note", trace.truncation_note},
                {"corrupt_chunk", trace.corrupt_chunk},
                {"stopped_cleanly", trace.stopped_cleanly},
                {"warnings", warnings_json(trace, report)}};
  if (const JobPlace& job = trace.job; job.known()) {
    j["trace"]["job"] = {{"rank", job.rank}, {"world_size", job.world_size}, {"backend", job.backend}};
    if (job.local_rank >= 0) j["trace"]["job"]["local_rank"] = job.local_rank;
    if (!job.launcher.empty()) j["trace"]["job"]["launcher"] = job.launcher;
  }
  if (!trace.job.host.empty()) j["trace"]["host"] = trace.job.host;
  if (trace.exit_status >= 0) j["trace"]["exit_status"] = trace.exit_status;
  j["findings"] = to_json(report.findings)["findings"];
  j["memory"] = nlohmann::json::array();
  for (const DeviceMemory& m : report.memory.devices) {
    std::uint64_t leaked = 0;
    for (auto i : m.leaked) leaked += m.blocks[i].bytes;
    nlohmann::json at_peak = nlohmann::json::array();
    for (const StackGroup& g : group_by_stack(m, m.live_at_peak)) {
      if (at_peak.size() >= 10) break;
      Finding holder;  // the emitters' JSON for a stack
      holder.stack = frames_of(trace, g.stack);
      nlohmann::json stack = to_json(holder).value("stack", nlohmann::json::array());
      at_peak.push_back({{"bytes", g.bytes}, {"count", g.count}, {"stack", std::move(stack)}});
    }
    j["memory"].push_back({{"device", m.device},
                           {"allocations", m.blocks.size()},
                           {"peak_bytes", m.peak_bytes},
                           {"peak_ns", m.peak_ns},
                           {"live_at_peak_by_stack", at_peak},
                           {"peak_allocated_counter", m.peak_allocated_counter},
                           {"peak_reserved", m.peak_reserved},
                           {"capacity_bytes", m.capacity_bytes},
                           {"live_at_end_bytes", leaked},
                           {"live_at_end_count", m.leaked.size()},
                           {"unmatched_frees", m.unmatched_frees},
                           {"double_frees", m.double_frees.size()}});
  }
  const RunPhases& p = report.phases;
  j["phases"] = {{"iterations", p.iterations.size()},
                 {"iterations_from", std::string(p.source)},
                 {"median_iteration_ns", median_iteration_ns(p)},
                 {"startup_ns", p.startup_ns()},
                 {"steady_begin_ns", p.steady().begin},
                 {"steady_end_ns", p.steady().end}};
  j["gpu_time"] = nlohmann::json::array();
  for (const GpuTime& g : report.gpu_time) j["gpu_time"].push_back(gpu_time_json(g));
  j["collectives"] = collectives_json(trace);
  return j;
}

std::string summarize_after_trace(const std::string& trace_path, std::ostream& out) {
  try {
    const AnalysedTrace analysed = load_and_analyze(trace_path);
    const Trace& trace = analysed.trace;
    const Report& report = analysed.report;
    print_summary(out, trace, report, {});
    const std::string html = trace_path + ".html";
    std::ofstream file(html, std::ios::binary);
    if (!file) {
      out << fmt::format("gpudiag: cannot write {}\n", html);
      return "";
    }
    write_html(file, trace, report);
    out << fmt::format("HTML report: {}\n", html);
    return html;
  } catch (const std::exception& e) {
    out << fmt::format("gpudiag: cannot summarize {}: {}\n", trace_path, e.what());
    return "";
  }
}

}  // namespace gpudiag
