// The straggler: the rank the others wait for. In a synchronous job every
// rank's steps take as long as the slowest rank's, so step time alone names
// no one; what differs is where the time goes. The straggler spends its step
// working (computing, loading data) while its peers spend theirs waiting in
// collectives for it. Each rank's own work per step is its step less its
// time in collectives; the rank whose own work is well above the others' is
// named, with the part of its work that grew, when it is the slowest in
// most steps.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"
#include "job_parts.h"

namespace gpudiag::detail {
namespace {

struct PerStep {
  std::uint64_t own = 0, collective = 0, data_loading = 0, gpu = 0, host = 0;
};

PerStep medians(const RankSummary& s) {
  std::vector<std::uint64_t> own, collective, loading, gpu, host;
  for (const RankStep& st : s.steps) {
    own.push_back(st.own_ns());
    collective.push_back(st.collective_ns);
    loading.push_back(st.data_loading_ns);
    gpu.push_back(st.gpu_busy_ns);
    host.push_back(st.own_ns() > st.data_loading_ns ? st.own_ns() - st.data_loading_ns : 0);
  }
  return {median(own), median(collective), median(loading), median(gpu), median(host)};
}

// In how many of the steps every rank has (by number) `rank` did the most
// own work, and how many such steps there are.
std::pair<std::size_t, std::size_t> steps_slowest_in(const JobReport& job, std::size_t rank) {
  std::map<std::int64_t, std::pair<std::uint64_t, std::size_t>> most;  // step -> (own work, ranks that have it)
  std::map<std::int64_t, std::uint64_t> mine;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    if (job.ranks[i].steps.empty()) continue;
    for (const RankStep& st : job.ranks[i].steps) {
      auto& [own, count] = most[st.number];
      if (i != rank) own = std::max(own, st.own_ns());
      ++count;
      if (i == rank) mine[st.number] = st.own_ns();
    }
  }
  std::size_t ranks_with_steps = 0;
  for (const RankSummary& s : job.ranks) ranks_with_steps += !s.steps.empty();
  std::size_t slowest = 0, compared = 0;
  for (const auto& [number, own] : mine) {
    const auto& [others_most, count] = most[number];
    if (count != ranks_with_steps) continue;
    ++compared;
    slowest += own > others_most;
  }
  return {slowest, compared};
}

}  // namespace

std::optional<Straggler> find_straggler(const JobReport& job, const JobOptions& options) {
  std::vector<std::size_t> with_steps;
  std::vector<PerStep> per_rank(job.ranks.size());
  for (std::size_t i = 0; i < job.ranks.size(); ++i)
    if (!job.ranks[i].steps.empty()) with_steps.push_back(i), per_rank[i] = medians(job.ranks[i]);
  if (with_steps.size() < 2) return std::nullopt;
  const std::size_t slowest = *std::max_element(with_steps.begin(), with_steps.end(), [&](std::size_t a, std::size_t b) {
    return per_rank[a].own < per_rank[b].own;
  });
  std::vector<std::uint64_t> own, collective, loading, gpu, host;
  for (const std::size_t i : with_steps) {
    if (i == slowest) continue;
    own.push_back(per_rank[i].own);
    collective.push_back(per_rank[i].collective);
    loading.push_back(per_rank[i].data_loading);
    gpu.push_back(per_rank[i].gpu);
    host.push_back(per_rank[i].host);
  }
  const PerStep others{median(own), median(collective), median(loading), median(gpu), median(host)};
  const PerStep& it = per_rank[slowest];
  if (static_cast<double>(it.own) < options.straggler_ratio * static_cast<double>(others.own) ||
      it.own < others.own + options.straggler_min_ns)
    return std::nullopt;
  // On busy hosts the slowest rank of a step changes from step to step, and
  // one may come out slowest on median by chance; a straggler is slowest in
  // most steps.
  const auto [slowest_steps, steps_compared] = steps_slowest_in(job, slowest);
  if (steps_compared == 0 || static_cast<double>(slowest_steps) < options.straggler_steps * static_cast<double>(steps_compared))
    return std::nullopt;

  Straggler s;
  s.rank = member_id(job, slowest);
  s.own_ns = it.own;
  s.others_own_ns = others.own;
  s.others_wait_ns = others.collective;
  const auto excess = [](std::uint64_t mine, std::uint64_t theirs) { return mine > theirs ? mine - theirs : 0; };
  // Data loading is part of the host's time; it is named when it is what grew.
  const std::pair<const char*, std::uint64_t> parts[] = {
      {"data loading", excess(it.data_loading, others.data_loading)},
      {"GPU time", excess(it.gpu, others.gpu)},
      {"host time (outside data loading)", excess(it.host, others.host)}};
  const auto* why = std::max_element(std::begin(parts), std::end(parts),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  s.why = why->first;
  s.why_excess_ns = why->second;
  s.message = fmt::format(
      "{} is the straggler: its own work takes {} per step (the step less its time in collectives), the other "
      "ranks' {} (medians); its {} is {} longer per step. The others wait for it: they spend {} per step in "
      "collectives, it spends {}",
      members(job, {s.rank}), format_duration(it.own), format_duration(others.own), s.why,
      format_duration(s.why_excess_ns), format_duration(others.collective), format_duration(it.collective));
  return s;
}

}  // namespace gpudiag::detail
