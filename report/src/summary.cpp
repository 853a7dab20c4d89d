// The terminal summary of `gpudiag report` (and of `gpudiag trace`).
#include <ostream>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "gpudiag/report/report.h"

namespace gpudiag {
namespace {

struct Style {
  bool color;
  std::string bold(std::string_view s) const { return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s); }
  std::string severity(Severity sev, std::string_view s) const {
    if (!color) return std::string(s);
    const char* code = sev == Severity::Error ? "\x1b[1;31m" : sev == Severity::Warning ? "\x1b[1;35m" : "\x1b[1;36m";
    return fmt::format("{}{}\x1b[0m", code, s);
  }
  std::string warn(std::string_view s) const { return color ? fmt::format("\x1b[1;33m{}\x1b[0m", s) : std::string(s); }
};

std::string pct(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:5.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "    -";
}

// "make_tensor <- Conv2d::forward <- train_step": the innermost frames of a
// stack, without parameter lists, so call sites that share an allocator
// function still read differently.
std::string short_stack(const std::vector<Frame>& frames, std::size_t depth = 3) {
  if (frames.empty()) return "an unrecorded stack";
  std::string out;
  for (std::size_t i = 0; i < frames.size() && i < depth; ++i) {
    std::string f = frames[i].function.empty() ? fmt::format("0x{:x}", frames[i].address) : frames[i].function;
    // Drop the trailing parameter list (matching its parentheses backwards), keep "(anonymous namespace)".
    if (auto close = f.rfind(')'); close != std::string::npos && close + 8 >= f.size()) {
      int depth = 0;
      for (std::size_t p = close + 1; p-- > 0;) {
        depth += f[p] == ')' ? 1 : f[p] == '(' ? -1 : 0;
        if (depth == 0) {
          if (p > 0) f.resize(p);
          break;
        }
      }
    }
    out += (i ? " <- " : "") + f;
  }
  return out;
}

}  // namespace

void print_summary(std::ostream& out, const Trace& trace, const Report& report, const SummaryOptions& options) {
  const Style st{options.color};
  out << st.bold(fmt::format("gpudiag report: {}", trace.path.empty() ? std::string("(trace)") : trace.path)) << '\n';
  // Analysed in passes, the trace here is the last pass: the counts are the whole trace's.
  const AnalysisPasses whole = report.passes.value_or(AnalysisPasses{
      .events = trace.event_count(), .kernels = trace.kernels.size(), .copies = trace.memcpys.size(),
      .allocations = trace.allocs.size(), .last_pass_from_ns = 0, .earlier_peaks = {}});
  out << fmt::format("  {} trace, {} events, {} kernels, {} copies, {} allocations, over {}\n", to_string(trace.source),
                     whole.events, whole.kernels, whole.copies, whole.allocations,
                     format_duration(trace.end_ns() - trace.begin_ns()));
  if (const JobPlace& job = trace.job; job.known())
    out << fmt::format("  {} of a distributed job{}{}{}\n", job.label(),
                       job.local_rank >= 0 ? fmt::format(", local rank {}", job.local_rank) : "",
                       job.launcher.empty() ? "" : ", launcher " + job.launcher,
                       job.host.empty() ? "" : ", host " + job.host);
  else if (!job.host.empty())
    out << fmt::format("  host {}{}\n", job.host, trace.pid != 0 ? fmt::format(", pid {}", trace.pid) : "");
  if (trace.exit_status >= 0) out << fmt::format("  the process exited with status {}\n", trace.exit_status);
  // A profiler's steps are the window profiled, whether they trained or not.
  if (const RunPhases& p = report.phases; p.has_loop())
    out << fmt::format(
        "  {}, {}{}\n",
        p.profiler_window ? fmt::format("profiled window: {} profiler step{}", p.iterations.size(),
                                        p.iterations.size() == 1 ? "" : "s")
                          : fmt::format("training loop: {} iteration{} ({})", p.iterations.size(),
                                        p.iterations.size() == 1 ? "" : "s", p.source),
        p.iterations.size() == 1 ? format_duration(median_iteration_ns(p))
                                 : format_duration(median_iteration_ns(p)) + " each",
        p.startup_ns() == 0 ? std::string()
        // A profiler's window opens on a running program: what precedes its first step is no start-up.
        : trace.source == TraceSource::Gdtrace
            ? fmt::format("; start-up took {} before the first iteration (module loading, autotuning, setting up), "
                          "judged apart from the loop",
                          format_duration(p.startup_ns()))
            : fmt::format("; {} of the trace before the first iteration, judged apart from the loop",
                          format_duration(p.startup_ns())));
  // Dropped events, a file cut short or damaged, an unclean stop: always shown.
  for (const SarifNotification& w : report_warnings(trace, report)) out << st.warn("  " + w.message) << '\n';

  // Findings by rule, errors first.
  out << '\n' << st.bold(fmt::format("Findings: {}", report.findings.size())) << '\n';
  if (report.findings.empty()) out << "  none\n";
  for (const auto& list : findings_by_rule(report)) {
    const std::string& rule_id = list.front()->rule_id;
    const Rule* rule = find_rule(rule_id);
    const Severity sev = list.front()->severity;
    out << fmt::format("  {} {} x{}{}\n", st.severity(sev, std::string(to_string(sev))),
                       rule ? rule_tag(*rule) : rule_id, list.size(),
                       rule ? fmt::format(": {}", rule->summary) : std::string());
    for (std::size_t i = 0; i < list.size() && i < options.findings_per_rule; ++i) {
      out << "    - " << list[i]->message << '\n';
      std::size_t shown = 0;
      for (const Frame& fr : list[i]->stack) {
        if (shown++ >= 3) break;
        out << "        at " << frame_text(fr) << '\n';
      }
    }
    if (list.size() > options.findings_per_rule)
      out << fmt::format("    ... and {} more (see --json or --html)\n", list.size() - options.findings_per_rule);
  }

  // Memory.
  out << '\n' << st.bold("Memory") << '\n';
  if (report.memory.devices.empty()) out << "  no allocations recorded\n";
  for (const DeviceMemory& m : report.memory.devices) {
    out << fmt::format("  {}: peak {} live", trace.device_label(m.device), format_bytes(m.peak_bytes));
    if (m.capacity_bytes) out << fmt::format(" of {} ({})", format_bytes(m.capacity_bytes), pct(m.peak_bytes, m.capacity_bytes));
    if (m.peak_reserved) out << fmt::format(", allocator reserved up to {}", format_bytes(m.peak_reserved));
    out << fmt::format(", {} allocations", m.blocks.size());
    if (!m.leaked.empty()) {
      std::uint64_t bytes = 0;
      for (auto i : m.leaked) bytes += m.blocks[i].bytes;
      out << fmt::format(", {} in {} still live at the end", format_bytes(bytes), m.leaked.size());
    }
    out << '\n';
    const auto groups = group_by_stack(m, m.live_at_peak);
    for (std::size_t i = 0; i < groups.size() && i < 3; ++i) {
      const auto frames = frames_of(trace, groups[i].stack);
      out << fmt::format("    {} in {} allocation{} at the peak from {}\n", format_bytes(groups[i].bytes),
                         groups[i].count, groups[i].count == 1 ? "" : "s",
                         short_stack(frames));
    }
  }

  // GPU time.
  out << '\n' << st.bold("GPU time") << '\n';
  if (report.gpu_time.empty()) out << "  no GPU activity recorded\n";
  for (const GpuTime& g : report.gpu_time) {
    out << fmt::format("  {}: {}\n", trace.device_label(g.device), gpu_time_span(g));
    const std::pair<const char*, std::uint64_t> rows[] = {
        {"busy", g.busy_ns},         {"idle", g.idle_ns},       {"computation", g.computation_ns},
        {"  kernels", g.kernel_ns},  {"  memsets", g.memset_ns}, {"memcpy", g.memcpy_ns},
        {"exposed memcpy", g.exposed_memcpy_ns}, {"communication", g.communication_ns}};
    for (const auto& [label, ns] : rows)
      out << fmt::format("    {:<15} {:>12} {}\n", label, format_duration(ns), pct(ns, g.total_ns));
    out << fmt::format("    {} kernels, {} copies, {} memsets\n", g.kernels, g.memcpys, g.memsets);
  }
}

}  // namespace gpudiag
