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

bool dropped_before(const RankSummary& rank, const std::string& group, std::int64_t first_kept, std::int64_t seq) {
  return seq < first_kept && std::any_of(rank.collectives_dropped.begin(), rank.collectives_dropped.end(),
                                         [&](const RankCollectivesDropped& d) { return d.group == group; });
}

std::string group_text(const std::string& group) {
  return group.empty() ? std::string("the default group") : "group " + group;
}

using CallsBySeq = std::map<std::int64_t, const RankCollective*>;

// A rank's signatures of its calls on the group after every `every` calls:
// those of the calls it dropped, carried on over the calls it kept.
std::vector<std::uint64_t> signatures_of(const RankSummary& rank, const std::string& group, const CallsBySeq& kept,
                                         std::int64_t every) {
  std::vector<std::uint64_t> out;
  std::int64_t n = 0;
  std::uint64_t sig = 0;
  for (const RankCollectivesDropped& d : rank.collectives_dropped)
    if (d.group == group && !d.signatures.empty()) out = d.signatures, n = d.count, sig = d.signatures.back();
  for (const auto& [seq, c] : kept) {
    if (seq != n) break;
    sig = collective_signature(sig, *c);
    if (++n % every == 0) out.push_back(sig);
  }
  return out;
}

// Where some ranks dropped their earlier calls on the group (numbered by
// their place in the trace), the first signature the ranks disagree on
// bounds where their sequences part. When a rank that disagrees no longer
// has those calls, the call itself is not known, and the desync is named by
// the range; otherwise the call-by-call comparison finds it.
std::optional<Desync> desync_in_dropped_calls(const JobReport& job, const std::string& group,
                                              const std::vector<CallsBySeq>& calls) {
  std::set<std::int64_t> spacing;
  for (const RankSummary& s : job.ranks)
    for (const RankCollectivesDropped& d : s.collectives_dropped)
      if (d.group == group) spacing.insert(d.every);
  if (spacing.size() != 1) return std::nullopt;
  const std::int64_t every = *spacing.begin();
  std::vector<std::vector<std::uint64_t>> sigs;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    sigs.push_back(signatures_of(job.ranks[i], group, calls[i], every));
    longest = std::max(longest, sigs.back().size());
  }
  for (std::size_t k = 0; k < longest; ++k) {
    std::map<std::uint64_t, std::vector<std::int32_t>> by_signature;
    bool calls_lost = false;
    for (std::size_t i = 0; i < job.ranks.size(); ++i) {
      if (sigs[i].size() <= k) continue;
      by_signature[sigs[i][k]].push_back(member_id(job, i));
      calls_lost |= calls[i].empty() || calls[i].begin()->first > static_cast<std::int64_t>(k) * every;
    }
    if (by_signature.size() < 2) continue;
    if (!calls_lost) return std::nullopt;
    std::vector<std::vector<std::int32_t>> sides;
    for (auto& [signature, ids] : by_signature) sides.push_back(std::move(ids));
    std::stable_sort(sides.begin(), sides.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    const std::int64_t from = static_cast<std::int64_t>(k) * every, to = from + every - 1;
    Desync d;
    d.group = group;
    d.seq = from;
    std::vector<std::string> said;
    for (std::size_t side = 0; side < sides.size(); ++side) {
      d.sides.push_back({.ranks = sides[side], .call = side == 0 ? "one sequence" : "another sequence", .stack = {}});
      said.push_back(fmt::format("{} made {}", members(job, sides[side]), d.sides.back().call));
    }
    d.message = fmt::format("the ranks' collectives differ between #{} and #{} of {}: {}. The summaries keep each "
                            "group's last calls, and only a signature of the ones before, so the first call that "
                            "differs is not known; profile fewer steps to see it. Every rank must make the same "
                            "collective calls on a group, in the same order",
                            from, to, group_text(group), fmt::join(said, "; "));
    return d;
  }
  return std::nullopt;
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
    std::vector<CallsBySeq> calls(job.ranks.size());
    std::set<std::int64_t> seqs;
    bool numbered_by_source = false;
    for (std::size_t i = 0; i < job.ranks.size(); ++i)
      for (const RankCollective& c : job.ranks[i].collectives)
        if (c.group == group) {
          calls[i].emplace(c.seq, &c), seqs.insert(c.seq);
          numbered_by_source |= c.seq_from_source;
        }
    if (!numbered_by_source)
      if (auto earlier = desync_in_dropped_calls(job, group, calls)) {
        // Before any call still kept: the earliest there is.
        first = std::move(earlier);
        first_time = 0;
        continue;
      }
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
        // Before the rank's first kept call on the group: not known here.
        if (call.c == nullptr && dropped_before(job.ranks[i], group, calls[i].begin()->first, seq)) continue;
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
                              seq, group_text(group),
                              fmt::join(said, "; "));
      first = std::move(d);
      first_time = when;
      break;
    }
  }
  return first;
}

}  // namespace gpudiag::detail
