// GD005 scalar-indexing at run time: many tiny device-to-host copies, the
// trace of the host reading device values one at a time (a loop of x[i] on a
// device vector, item() per element or per step); in the training loop when
// the trace shows one. A read blocks the host until the GPU has caught up; a
// small write nobody waits for (PyTorch's per-step scalar upload) is no such
// access. A copy into pageable memory returns only when done, whatever its
// API says; an asynchronous one into pinned memory returns at once, and holds
// the host only when it waits for it: PyTorch's item() copies into pinned
// memory and synchronises, so the copy lands while the host is in that sync,
// or, when the GPU was idle, just before: then the call its thread made next
// was that sync.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {

namespace {

// Whether the call that queued a copy was followed, as its thread's next
// call, by a host sync of the copy's stream or of the whole device.
class NextCalls {
 public:
  explicit NextCalls(const Trace& t) : t_(t) {
    for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
      threads_[t.api_calls[i].tid].push_back(i);
      if (t.api_calls[i].correlation != 0) call_of_.emplace(t.api_calls[i].correlation, i);
    }
    position_.resize(t.api_calls.size());
    for (auto& [tid, calls] : threads_) {
      std::stable_sort(calls.begin(), calls.end(),
                       [&](std::size_t a, std::size_t b) { return t.api_calls[a].start_ns < t.api_calls[b].start_ns; });
      for (std::size_t k = 0; k < calls.size(); ++k) position_[calls[k]] = k;
    }
    for (std::size_t i = 0; i < t.syncs.size(); ++i)
      if (t.syncs[i].correlation != 0) sync_of_.emplace(t.syncs[i].correlation, i);
  }

  bool synced_at_once(const Memcpy& c) const {
    const auto call = call_of_.find(c.correlation);
    if (c.correlation == 0 || call == call_of_.end()) return false;
    const auto& calls = threads_.at(t_.api_calls[call->second].tid);
    const std::size_t at = position_[call->second];
    if (at + 1 >= calls.size()) return false;
    const ApiCall& next = t_.api_calls[calls[at + 1]];
    const auto sync = sync_of_.find(next.correlation);
    if (next.correlation == 0 || sync == sync_of_.end() || api_kind(t_.str(next.name)) != ApiKind::Sync) return false;
    const Sync& s = t_.syncs[sync->second];
    return host_waits(s.kind) && (s.kind == SyncKind::Device || s.kind == SyncKind::Context || s.stream == c.stream);
  }

 private:
  const Trace& t_;
  std::unordered_map<std::uint32_t, std::vector<std::size_t>> threads_;  // each thread's calls in time order
  std::vector<std::size_t> position_;  // a call's place in its thread's list
  std::unordered_map<std::uint64_t, std::size_t> call_of_, sync_of_;
};

}  // namespace

void detect_scalar_indexing(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0, ns = 0;
  };
  std::map<StackId, Group> by_stack;
  std::uint64_t count = 0, ns = 0;
  std::vector<Interval> waits;
  for (const Sync& s : t.syncs)
    if (host_waits(s.kind)) waits.push_back({s.start_ns, std::max(s.start_ns, s.end_ns)});
  waits = merge_intervals(std::move(waits));
  auto waited_for = [&](std::uint64_t landed) {
    auto after = std::upper_bound(waits.begin(), waits.end(), landed,
                                  [](std::uint64_t at, const Interval& w) { return at < w.begin; });
    return after != waits.begin() && std::prev(after)->end >= landed;
  };
  std::optional<NextCalls> next_calls;  // built for the first copy that needs it
  for (const Memcpy& c : t.memcpys) {
    if (c.bytes > ctx.options.tiny_transfer_bytes || c.copy != CopyKind::DtoH || !ctx.phases.in_steady_state(c.start_ns))
      continue;
    if (c.async && c.dst_kind == MemKind::Pinned && !waited_for(c.end_ns)) {
      if (!next_calls) next_calls.emplace(t);
      if (!next_calls->synced_at_once(c)) continue;
    }
    ++count;
    ns += c.end_ns - c.start_ns;
    Group& g = by_stack[ctx.memory.canonical_stack(c.stack)];
    ++g.count;
    g.ns += c.end_ns - c.start_ns;
  }
  if (count < ctx.options.tiny_transfer_count) return;
  std::vector<std::pair<StackId, Group>> groups(by_stack.begin(), by_stack.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  const std::string where =
      ctx.phases.has_loop()
          ? fmt::format(" in the training loop ({:.1f} per iteration)",
                        static_cast<double>(count) / static_cast<double>(ctx.phases.iterations.size()))
          : std::string();
  Finding f = make_finding(
      "GD005", fmt::format("the host read device memory {} times{}, at most {} B each ({} of copy time, plus a launch "
                           "and a wait for the GPU per read): this is element-by-element access to device memory; "
                           "keep the values on the device (accumulate metrics there) and read them once, or copy the "
                           "whole array once",
                           count, where, ctx.options.tiny_transfer_bytes, format_duration(ns)));
  f.stack = frames_of(t, groups.front().first);
  for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} tiny copies from this stack", groups[i].second.count), {},
                       frames_of(t, groups[i].first)});
  out.push_back(std::move(f));
}

}  // namespace gpudiag
