// merge_job: summaries in, one job report out. The rank that failed first,
// the desync and the straggler each have their own file; this one sorts the
// ranks, names the missing ones and merges the findings.
#include "gpudiag/job/job_report.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "job_parts.h"

namespace gpudiag {
namespace {

// Where a finding is, the same on every rank that has it: its source
// location, else its innermost frames, else its message with the numbers
// taken out (they differ from rank to rank: "blocked 17.6%").
std::string site_of(const Finding& f) {
  if (f.location.known()) return fmt::format("{}:{}", f.location.file, f.location.line);
  std::string site;
  for (std::size_t i = 0; i < f.stack.size() && i < 3; ++i)
    site += fmt::format("{}|{}:{}|", f.stack[i].function, f.stack[i].file, f.stack[i].line);
  if (!site.empty()) return site;
  for (const char c : f.message) {
    const bool digit = c >= '0' && c <= '9';
    if (digit || ((c == '.' || c == ',') && !site.empty() && site.back() == '#')) {
      if (site.empty() || site.back() != '#') site += '#';
    } else {
      site += c;
    }
  }
  return site;
}

std::vector<JobFinding> merge_findings(const JobReport& job) {
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (rule, site) -> position
  std::vector<JobFinding> merged;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const std::int32_t id = detail::member_id(job, i);
    std::set<std::size_t> seen_here;
    for (const Finding& f : job.ranks[i].findings) {
      const auto [it, fresh] = index.try_emplace({f.rule_id, site_of(f)}, merged.size());
      if (fresh) {
        merged.push_back({.finding = f, .ranks = {id}, .message_rank = id});
        seen_here.insert(it->second);
        continue;
      }
      JobFinding& m = merged[it->second];
      m.finding.severity = std::max(m.finding.severity, f.severity);
      if (seen_here.insert(it->second).second) m.ranks.push_back(id);
    }
  }
  std::stable_sort(merged.begin(), merged.end(), [](const JobFinding& a, const JobFinding& b) {
    if (a.finding.severity != b.finding.severity) return a.finding.severity > b.finding.severity;
    return a.finding.rule_id < b.finding.rule_id;
  });
  return merged;
}

}  // namespace

namespace detail {

std::int32_t member_id(const JobReport& job, std::size_t index) {
  return job.ranked ? job.ranks[index].job.rank : static_cast<std::int32_t>(index);
}

std::string collective_label(const RankCollective& c) {
  return c.group.empty() ? fmt::format("{} #{} of the default group", c.op, c.seq)
                         : fmt::format("{} #{} (group {})", c.op, c.seq, c.group);
}

std::uint64_t median(std::vector<std::uint64_t> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

std::string members(const JobReport& job, const std::vector<std::int32_t>& ids) {
  const char* word = job.ranked ? (ids.size() == 1 ? "rank" : "ranks") : (ids.size() == 1 ? "trace" : "traces");
  return fmt::format("{} {}", word, rank_list(ids));
}

}  // namespace detail

std::string rank_list(const std::vector<std::int32_t>& ranks) {
  std::vector<std::int32_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(sorted[i]) : fmt::format("{}\u2013{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

JobReport merge_job(std::vector<RankSummary> ranks, const JobOptions& options) {
  JobReport job;
  std::sort(ranks.begin(), ranks.end(), [](const RankSummary& a, const RankSummary& b) {
    const bool ra = a.job.rank >= 0, rb = b.job.rank >= 0;
    if (ra != rb) return ra;
    if (a.job.rank != b.job.rank) return a.job.rank < b.job.rank;
    return a.path < b.path;
  });
  // Beside the ranks' traces, a process that says no rank is the launcher
  // (torchrun, mpirun, srun) or no part of the job: it is left out, and said.
  const bool any_ranked =
      std::any_of(ranks.begin(), ranks.end(), [](const RankSummary& s) { return s.job.rank >= 0; });
  for (RankSummary& s : ranks) {
    if (any_ranked && s.job.rank < 0) {
      job.problems.push_back(fmt::format("{} says no rank (the launcher, or a process outside the job): it is left "
                                         "out of the job report; report it on its own",
                                         s.path));
      continue;
    }
    job.ranks.push_back(std::move(s));
  }
  job.ranked = any_ranked;

  std::set<std::int32_t> world_sizes;
  for (const RankSummary& s : job.ranks)
    if (s.job.world_size > 0) world_sizes.insert(s.job.world_size);
  if (world_sizes.size() > 1)
    job.problems.push_back(fmt::format("the traces say different world sizes ({}): they are of different jobs",
                                       fmt::join(world_sizes, ", ")));
  if (!world_sizes.empty()) job.world_size = *world_sizes.rbegin();

  if (job.ranked) {
    std::set<std::int32_t> present;
    for (std::size_t i = 0; i < job.ranks.size(); ++i) {
      if (!present.insert(job.ranks[i].job.rank).second)
        job.problems.push_back(fmt::format("two traces say they are rank {} ({} and {})", job.ranks[i].job.rank,
                                           job.ranks[i - 1].path, job.ranks[i].path));
    }
    for (std::int32_t r = 0; r < job.world_size; ++r)
      if (!present.count(r)) job.missing_ranks.push_back(r);
  }
  std::set<std::string> clocks;
  for (const RankSummary& s : job.ranks) clocks.insert(s.clock);
  if (clocks.size() > 1)
    job.problems.push_back("some traces are on the epoch's clock and others on their own: times are compared as "
                           "they are, which is right only on one host");

  job.findings = merge_findings(job);
  if (!job.missing_ranks.empty())
    job.facts.push_back({.id = "missing-ranks", .severity = Severity::Warning,
                         .message = fmt::format("{} of {} left no trace: a rank that dies inside a collective library "
                                                "often writes none",
                                                detail::members(job, job.missing_ranks), job.world_size)});
  job.first_failure = detail::find_first_failure(job, options);
  if (job.first_failure)
    job.facts.push_back({.id = "first-failure", .severity = Severity::Error, .message = job.first_failure->message});
  job.desync = detail::find_desync(job);
  if (job.desync) job.facts.push_back({.id = "desync", .severity = Severity::Error, .message = job.desync->message});
  job.straggler = detail::find_straggler(job, options);
  if (job.straggler)
    job.facts.push_back({.id = "straggler", .severity = Severity::Warning, .message = job.straggler->message});
  return job;
}

std::optional<Severity> worst_severity(const JobReport& job) {
  std::optional<Severity> worst;
  for (const JobFinding& f : job.findings) worst = std::max(worst.value_or(Severity::Note), f.finding.severity);
  for (const JobReport::Fact& f : job.facts) worst = std::max(worst.value_or(Severity::Note), f.severity);
  return worst;
}

}  // namespace gpudiag
