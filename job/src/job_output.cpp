// The job report as a terminal summary, JSON and SARIF.
#include <ostream>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/job/job_report.h"
#include "job_parts.h"

namespace gpudiag {
namespace {

std::string pct(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

std::string paint(bool color, const char* code, std::string_view s) {
  return color ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : std::string(s);
}

const char* severity_colour(Severity s) {
  return s == Severity::Error ? "1;31" : s == Severity::Warning ? "1;35" : "1;36";
}

// "3 ranks (0–2)", with the missing ones.
std::string rank_line(const JobReport& job) {
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) ids.push_back(detail::member_id(job, i));
  std::string line = fmt::format("{} trace{}", job.ranks.size(), job.ranks.size() == 1 ? "" : "s");
  if (job.ranked) line += fmt::format(" of {}", detail::members(job, ids));
  if (job.world_size > 0) line += fmt::format(", world size {}", job.world_size);
  return line;
}

// How uneven the ranks' peaks are: the largest against the smallest.
std::string unevenness(const JobReport& job) {
  std::uint64_t low = ~std::uint64_t{0}, high = 0;
  for (const RankSummary& s : job.ranks)
    if (s.peak_bytes() > 0) low = std::min(low, s.peak_bytes()), high = std::max(high, s.peak_bytes());
  if (high == 0 || low == high) return {};
  return fmt::format("the largest peak is {:.2f}x the smallest", static_cast<double>(high) / static_cast<double>(low));
}

}  // namespace

void print_job_summary(std::ostream& out, const JobReport& job, bool color) {
  out << paint(color, "1", "gpudiag job report") << '\n';
  out << "  " << rank_line(job) << '\n';
  for (const std::string& p : job.problems) out << paint(color, "1;33", "  " + p) << '\n';
  for (std::size_t i = 0; i < job.ranks.size(); ++i)
    for (const std::string& w : job.ranks[i].warnings)
      out << paint(color, "1;33", fmt::format("  {}: {}", job.ranks[i].name(), w)) << '\n';

  out << '\n' << paint(color, "1", "The job") << '\n';
  if (job.facts.empty()) out << "  no failure, desync, straggler or missing rank\n";
  for (const JobReport::Fact& f : job.facts)
    out << fmt::format("  {} [{}] {}\n", paint(color, severity_colour(f.severity), to_string(f.severity)), f.id,
                       f.message);
  if (job.first_failure && !job.first_failure->failure.stack.empty())
    for (std::size_t k = 0; k < job.first_failure->failure.stack.size() && k < 3; ++k)
      out << "      at " << frame_text(job.first_failure->failure.stack[k]) << '\n';

  out << '\n' << paint(color, "1", fmt::format("Findings: {}", job.findings.size())) << '\n';
  if (job.findings.empty()) out << "  none\n";
  for (const JobFinding& f : job.findings) {
    const Rule* rule = find_rule(f.finding.rule_id);
    const bool everywhere = f.ranks.size() == job.ranks.size() && job.ranks.size() > 1;
    const std::string where = detail::members(job, f.ranks) + (f.ranks.size() == 1 && job.ranks.size() > 1 ? " only"
                                                               : everywhere ? " (all)" : "");
    out << fmt::format("  {} {} on {}\n", paint(color, severity_colour(f.finding.severity), to_string(f.finding.severity)),
                       rule ? rule_tag(*rule) : f.finding.rule_id, where);
    out << fmt::format("    - {}{}\n", f.ranks.size() > 1 ? fmt::format("{}: ", detail::members(job, {f.message_rank})) : "",
                       f.finding.message);
    for (std::size_t k = 0; k < f.finding.stack.size() && k < 3; ++k)
      out << "        at " << frame_text(f.finding.stack[k]) << '\n';
  }

  out << '\n' << paint(color, "1", "Per rank") << '\n';
  out << fmt::format("  {:<10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>8} {:>8}  {}\n", "", "steps", "step", "own work",
                     "collectives", "peak", "GPU idle", "exposed", "ended");
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankSummary& s = job.ranks[i];
    std::vector<std::uint64_t> step, own, coll;
    for (const RankStep& st : s.steps) step.push_back(st.length()), own.push_back(st.own_ns()), coll.push_back(st.collective_ns);
    std::uint64_t total = 0, idle = 0, exposed = 0;
    for (const RankGpuTime& g : s.gpu_time) total += g.total_ns, idle += g.idle_ns, exposed += g.exposed_comm_ns;
    const std::string ended = s.failure ? fmt::format("{} ({})", s.failure->kind, s.failure->what)
                              : s.exit_status >= 0 ? fmt::format("exit status {}", s.exit_status)
                                                   : std::string("-");
    out << fmt::format("  {:<10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>8} {:>8}  {}\n", s.name(), s.steps.size(),
                       s.steps.empty() ? "-" : format_duration(detail::median(step)),
                       s.steps.empty() ? "-" : format_duration(detail::median(own)),
                       s.steps.empty() ? "-" : format_duration(detail::median(coll)),
                       s.peak_bytes() ? format_bytes(s.peak_bytes()) : "-", pct(idle, total), pct(exposed, total),
                       ended.size() > 60 ? ended.substr(0, 57) + "..." : ended);
  }
  out << "  (step, own work and collectives: medians per step; own work is the step less its time in collectives;\n"
         "   GPU idle and exposed communication: shares of each rank's GPU time)\n";
  if (const std::string u = unevenness(job); !u.empty()) out << "  Memory: " << u << '\n';
}

nlohmann::json job_json(const JobReport& job) {
  using nlohmann::json;
  json j;
  j["job"] = {{"world_size", job.world_size}, {"ranked", job.ranked}, {"missing_ranks", job.missing_ranks},
              {"problems", job.problems}};
  json facts = json::array();
  for (const JobReport::Fact& f : job.facts)
    facts.push_back({{"id", f.id}, {"severity", std::string(to_string(f.severity))}, {"message", f.message}});
  j["job"]["facts"] = std::move(facts);
  if (job.first_failure) {
    const FirstFailure& ff = *job.first_failure;
    json others = json::array();
    for (const RankActivity& a : ff.others)
      others.push_back({{"rank", a.rank}, {"state", a.state}, {"collective", a.collective},
                        {"waited_ns", a.waited_ns}, {"unfinished", a.unfinished}, {"step", a.step}});
    j["job"]["first_failure"] = {{"rank", ff.rank}, {"kind", ff.failure.kind}, {"what", ff.failure.what},
                                 {"time_ns", std::to_string(ff.failure.time_ns)}, {"step", ff.failure.step},
                                 {"others", std::move(others)}, {"message", ff.message}};
  }
  if (job.desync) {
    json sides = json::array();
    for (const Desync::Side& s : job.desync->sides) {
      Finding carrier;
      carrier.stack = s.stack;
      sides.push_back({{"ranks", s.ranks}, {"call", s.call}, {"stack", to_json(carrier).value("stack", json::array())}});
    }
    j["job"]["desync"] = {{"group", job.desync->group}, {"seq", job.desync->seq}, {"sides", std::move(sides)},
                          {"message", job.desync->message}};
  }
  if (job.straggler)
    j["job"]["straggler"] = {{"rank", job.straggler->rank}, {"own_ns", job.straggler->own_ns},
                             {"others_own_ns", job.straggler->others_own_ns},
                             {"others_wait_ns", job.straggler->others_wait_ns}, {"why", job.straggler->why},
                             {"why_excess_ns", job.straggler->why_excess_ns}, {"message", job.straggler->message}};
  json findings = json::array();
  for (const JobFinding& f : job.findings) {
    json one = to_json(f.finding);
    one["ranks"] = f.ranks;
    one["message_rank"] = f.message_rank;
    findings.push_back(std::move(one));
  }
  j["findings"] = std::move(findings);
  json ranks = json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankSummary& s = job.ranks[i];
    json r = {{"id", detail::member_id(job, i)}, {"path", s.path}, {"source", s.source}, {"rank", s.job.rank},
              {"host", s.job.host}, {"pid", s.pid}, {"exit_status", s.exit_status}, {"clock", s.clock},
              {"begin_ns", std::to_string(s.begin_ns)}, {"end_ns", std::to_string(s.end_ns)},
              {"steps", s.steps.size()}, {"collectives", s.collectives.size()}, {"peak_bytes", s.peak_bytes()},
              {"warnings", s.warnings}};
    if (s.failure) r["failure"] = {{"kind", s.failure->kind}, {"what", s.failure->what}, {"step", s.failure->step}};
    std::vector<std::uint64_t> step, own, coll, loading;
    for (const RankStep& st : s.steps)
      step.push_back(st.length()), own.push_back(st.own_ns()), coll.push_back(st.collective_ns),
          loading.push_back(st.data_loading_ns);
    r["median_step_ns"] = detail::median(step);
    r["median_own_ns"] = detail::median(own);
    r["median_collective_ns"] = detail::median(coll);
    r["median_data_loading_ns"] = detail::median(loading);
    json gpu = json::array();
    for (const RankGpuTime& g : s.gpu_time)
      gpu.push_back({{"device", g.device}, {"total_ns", g.total_ns}, {"idle_ns", g.idle_ns},
                     {"computation_ns", g.computation_ns}, {"communication_ns", g.communication_ns},
                     {"exposed_comm_ns", g.exposed_comm_ns}});
    r["gpu_time"] = std::move(gpu);
    ranks.push_back(std::move(r));
  }
  j["ranks"] = std::move(ranks);
  return j;
}

void emit_job_sarif(std::ostream& out, const JobReport& job, SarifOptions options) {
  std::vector<Finding> findings;
  for (const JobFinding& f : job.findings) {
    Finding one = f.finding;
    one.message = fmt::format("{} (on {})", one.message, detail::members(job, f.ranks));
    findings.push_back(std::move(one));
  }
  // The job's own findings are no catalogue rule: they are results of
  // tool-defined rules, so that CI fails on them as on any other.
  static const std::pair<const char*, const char*> kFactRules[] = {
      {"missing-ranks", "A rank of the job's world size left no trace"},
      {"first-failure", "The rank that failed first, and what the others were doing then"},
      {"desync", "The ranks of a process group called different collectives at the same position"},
      {"straggler", "The rank the others wait for in collectives"}};
  for (const auto& [id, description] : kFactRules) options.tool_rules.push_back({.id = id, .description = description});
  for (const JobReport::Fact& f : job.facts) {
    Finding one;
    one.rule_id = f.id;
    one.severity = f.severity;
    one.message = f.message;
    findings.push_back(std::move(one));
  }
  for (const std::string& p : job.problems)
    options.warnings.push_back({.id = "job-traces", .description = "The job's traces contradict each other", .message = p});
  emit_sarif(out, findings, options);
}

}  // namespace gpudiag
