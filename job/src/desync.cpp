// A desync: the ranks of a process group did not call the same collectives
// in the same order. Every rank must make the same sequence of calls on a
// group; one that skips or adds one (a collective under `if rank == 0`, a
// different number of batches) leaves the group matching unlike calls or
// waiting forever, the classic hang. The first position where the ranks'
// sequences differ is named, with each side's call and stack.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"
#include "job_parts.h"

namespace gpudiag::detail {
namespace {

struct Call {
  const RankCollective* c = nullptr;  // nullptr: the rank made no such call
  bool same_as(const Call& o) const {
    if ((c == nullptr) != (o.c == nullptr)) return false;
    if (c == nullptr) return true;
    return c->op == o.c->op && (c->bytes == 0 || o.c->bytes == 0 || c->bytes == o.c->bytes);
  }
  std::string text() const {
    if (c == nullptr) return "none: the rank went on without calling it";
    return c->bytes ? fmt::format("{} of {}", c->op, format_bytes(c->bytes)) : c->op;
  }
};

// Collectives numbered by their place in each trace line up only when the
// traces start at the same point of the run: whole runs, or profiles that
// start at the same step.
bool positions_comparable(const JobReport& job, const std::string& group) {
  std::set<std::int64_t> first_steps;
  for (const RankSummary& s : job.ranks) {
    const bool any = std::any_of(s.collectives.begin(), s.collectives.end(),
                                 [&](const RankCollective& c) { return c.group == group && !c.seq_from_source; });
    if (!any) continue;
    first_steps.insert(s.steps.empty() ? -1 : s.steps.front().number);
  }
  return first_steps.size() <= 1;
}

}  // namespace

std::optional<Desync> find_desync(const JobReport& job) {
  std::set<std::string> groups;
  for (const RankSummary& s : job.ranks)
    for (const RankCollective& c : s.collectives) groups.insert(c.group);
  std::optional<Desync> first;
  std::uint64_t first_time = 0;
  for (const std::string& group : groups) {
    if (!positions_comparable(job, group)) continue;
    // Each rank's calls on the group by sequence number.
    std::vector<std::map<std::int64_t, const RankCollective*>> calls(job.ranks.size());
    std::set<std::int64_t> seqs;
    for (std::size_t i = 0; i < job.ranks.size(); ++i)
      for (const RankCollective& c : job.ranks[i].collectives)
        if (c.group == group) calls[i].emplace(c.seq, &c), seqs.insert(c.seq);
    for (const std::int64_t seq : seqs) {
      // A rank whose calls on the group end before this one stopped (failed,
      // or its trace ended): it is no side. One that made later calls on the
      // group without this one skipped it.
      std::uint64_t when = ~std::uint64_t{0};
      for (const auto& m : calls)
        if (auto it = m.find(seq); it != m.end()) when = std::min(when, it->second->begin_ns);
      std::vector<std::pair<Call, std::vector<std::int32_t>>> sides;
      for (std::size_t i = 0; i < job.ranks.size(); ++i) {
        const auto it = calls[i].find(seq);
        Call call{it == calls[i].end() ? nullptr : it->second};
        if (call.c == nullptr && (calls[i].empty() || calls[i].rbegin()->first < seq)) continue;
        auto side = std::find_if(sides.begin(), sides.end(), [&](const auto& s) { return s.first.same_as(call); });
        if (side == sides.end()) sides.push_back({call, {}}), side = sides.end() - 1;
        side->second.push_back(member_id(job, i));
      }
      if (sides.size() < 2) continue;
      if (first && when >= first_time) break;
      std::stable_sort(sides.begin(), sides.end(),
                       [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
      Desync d;
      d.group = group;
      d.seq = seq;
      std::vector<std::string> said;
      for (const auto& [call, ids] : sides) {
        d.sides.push_back({.ranks = ids, .call = call.text(), .stack = call.c ? call.c->stack : std::vector<Frame>{}});
        std::string where;
        if (call.c && !call.c->stack.empty()) where = fmt::format(" at {}", frame_text(call.c->stack.front()));
        said.push_back(fmt::format("{} called {}{}", members(job, ids), call.text(), where));
      }
      d.message = fmt::format("the ranks' collectives differ at #{} of {}: {}. Every rank must make the same "
                              "collective calls on a group, in the same order; a call made on some ranks only (under "
                              "a condition on the rank or on data) hangs the job or mixes up unlike calls",
                              seq, group.empty() ? std::string("the default group") : "group " + group,
                              fmt::join(said, "; "));
      first = std::move(d);
      first_time = when;
      break;
    }
  }
  return first;
}

}  // namespace gpudiag::detail
