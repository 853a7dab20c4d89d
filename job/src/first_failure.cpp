// The rank that failed first, and what every other rank was doing then.
//
// A rank that fails (crash, out-of-memory, a CUDA error, a non-zero exit)
// leaves its peers blocked in their next collective until the collective
// library's timeout; then they fail too, each with its own timeout error.
// The earliest failure on the job's clock is the cause; the others' waits
// are its effect. A Kineto trace does not say how its process ended: there,
// a rank whose trace ends first, outside any collective, while a peer then
// waited long in one, "stopped" first.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"
#include "job_parts.h"

namespace gpudiag::detail {
namespace {

// The collective a rank was blocked in after `t`: the first one still
// running at t or begun after it, when it never returned, or lasted at
// least `long_wait`. nullptr when the rank did not block.
const RankCollective* blocked_in(const RankSummary& s, std::uint64_t t, std::uint64_t long_wait) {
  for (const RankCollective& c : s.collectives) {
    if (c.end_ns < t) continue;
    if (c.unfinished || c.end_ns - c.begin_ns >= long_wait) return &c;
    return nullptr;  // its next collective returned in time: it was not waiting for the failed rank there
  }
  return nullptr;
}

std::int64_t step_at(const RankSummary& s, std::uint64_t t) {
  for (const RankStep& step : s.steps)
    if (step.begin_ns <= t && t < step.end_ns) return step.number;
  return -1;
}

RankActivity activity_at(const RankSummary& s, std::int32_t id, std::uint64_t t, std::uint64_t long_wait) {
  RankActivity a{.rank = id, .state = "other", .collective = {}, .waited_ns = 0, .unfinished = false, .step = -1};
  if (const RankCollective* c = blocked_in(s, t, long_wait)) {
    a.state = "collective";
    a.collective = collective_label(*c);
    a.unfinished = c->unfinished;
    a.waited_ns = (c->unfinished ? std::max(s.end_ns, c->end_ns) : c->end_ns) - c->begin_ns;
    return a;
  }
  if (s.end_ns < t) {
    a.state = "ended";
    return a;
  }
  a.step = step_at(s, t);
  if (a.step >= 0) a.state = "step";
  return a;
}

std::string describe_others(const JobReport& job, const std::vector<RankActivity>& others) {
  // Ranks in the same state are said together.
  std::map<std::string, std::vector<std::int32_t>> by_state;
  std::vector<std::string> order;
  for (const RankActivity& a : others) {
    std::string what;
    if (a.state == "collective")
      what = fmt::format("{} in {} for {}{}", a.unfinished ? "were still waiting" : "waited", a.collective,
                         format_duration(a.waited_ns), a.unfinished ? " when their traces end" : "");
    else if (a.state == "ended")
      what = "had already ended";
    else if (a.state == "step")
      what = fmt::format("were running step {}", a.step);
    else
      what = "were outside the training loop";
    if (!by_state.count(what)) order.push_back(what);
    by_state[what].push_back(a.rank);
  }
  std::vector<std::string> parts;
  for (const std::string& what : order) {
    std::string text = what;
    if (by_state[what].size() == 1) {  // one rank: "was", not "were"
      for (const auto& [plural, singular] : {std::pair{"were ", "was "}, std::pair{"had ", "had "}})
        if (text.starts_with(plural)) text = singular + text.substr(std::string_view(plural).size());
      if (const auto at = text.find("their traces end"); at != std::string::npos) text.replace(at, 16, "its trace ends");
    }
    parts.push_back(fmt::format("{} {}", members(job, by_state[what]), text));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::optional<FirstFailure> find_first_failure(const JobReport& job, const JobOptions& options) {
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < job.ranks.size(); ++i)
    if (job.ranks[i].failure && (!first || job.ranks[i].failure->time_ns < job.ranks[*first].failure->time_ns))
      first = i;
  RankFailure failure;
  if (first) {
    failure = *job.ranks[*first].failure;
  } else {
    // No trace says how it failed: the first to end, outside a collective,
    // with a peer left waiting.
    std::optional<std::size_t> earliest;
    for (std::size_t i = 0; i < job.ranks.size(); ++i)
      if (!earliest || job.ranks[i].end_ns < job.ranks[*earliest].end_ns) earliest = i;
    if (!earliest || job.ranks.size() < 2) return std::nullopt;
    const RankSummary& s = job.ranks[*earliest];
    if (!s.collectives.empty() && (s.collectives.back().unfinished || s.collectives.back().end_ns >= s.end_ns))
      return std::nullopt;  // it ended inside a collective: waiting itself
    bool peer_waited = false;
    for (std::size_t i = 0; i < job.ranks.size(); ++i)
      if (i != *earliest) peer_waited |= blocked_in(job.ranks[i], s.end_ns, options.stopped_wait_ns) != nullptr;
    if (!peer_waited) return std::nullopt;
    failure = {.kind = "stopped", .time_ns = s.end_ns,
               .what = fmt::format("its trace ends outside any collective ({} traces do not say how a process ended)",
                                   s.source),
               .step = s.steps.empty() ? -1 : s.steps.back().number + 1, .stack = {}};
    // Its last whole step is s.steps.back(); a trace that stops does so in the step after it.
    for (const RankStep& step : s.steps)
      if (step.begin_ns <= s.end_ns && s.end_ns <= step.end_ns) failure.step = step.number;
    first = earliest;
  }
  FirstFailure out;
  out.rank = member_id(job, *first);
  out.failure = failure;
  for (std::size_t i = 0; i < job.ranks.size(); ++i)
    if (i != *first)
      out.others.push_back(activity_at(job.ranks[i], member_id(job, i), failure.time_ns, options.stopped_wait_ns));
  const std::string when = failure.step >= 0 ? fmt::format(" in step {}", failure.step) : std::string();
  out.message = fmt::format("{} failed first{}: {}", members(job, {out.rank}), when, failure.what);
  if (failure.kind == "stopped")
    out.message = fmt::format("{} stopped first{}: {}", members(job, {out.rank}), when, failure.what);
  // A rank that left no trace may have failed before any that did: a rank
  // that aborts inside the collective library writes none, and its peers
  // then fail one after the other as their connections to it close.
  if (!job.missing_ranks.empty())
    out.message = fmt::format("{} left no trace and may have failed first; of the traces left, {}",
                              members(job, job.missing_ranks), out.message);
  if (!out.others.empty()) out.message += fmt::format(". Then {}", describe_others(job, out.others));
  return out;
}

}  // namespace gpudiag::detail
