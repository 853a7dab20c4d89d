// GD010 sync-in-loop at run time: the share of wall time the host spends
// blocked in synchronisations (device, stream, event syncs; blocking copies
// show as their own sync in the trace where the source records one), and per
// iteration when the repeating kernel sequence shows the training loop.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_sync_in_loop(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  std::vector<Interval> blocked;
  std::map<StackId, std::pair<std::uint64_t, std::uint64_t>> by_stack;  // count, ns
  for (const Sync& s : t.syncs) {
    if (s.kind == SyncKind::StreamWaitEvent || s.end_ns <= s.start_ns) continue;
    blocked.push_back({s.start_ns, s.end_ns});
    auto& g = by_stack[ctx.memory.canonical_stack(s.stack)];
    ++g.first;
    g.second += s.end_ns - s.start_ns;
  }
  const std::uint64_t wall = t.end_ns() - t.begin_ns();
  if (blocked.empty() || wall == 0) return;
  const auto merged = merge_intervals(blocked);
  const std::uint64_t blocked_ns = total_length(merged);
  const double share = static_cast<double>(blocked_ns) / static_cast<double>(wall);
  if (share < ctx.options.sync_share) return;
  std::string per_iteration;
  if (const auto iterations = detect_iterations(t); !iterations.empty()) {
    std::vector<double> shares;
    for (const Interval& it : iterations) {
      std::uint64_t in = 0;
      for (const Interval& b : merged) {
        const std::uint64_t lo = std::max(b.begin, it.begin), hi = std::min(b.end, it.end);
        if (lo < hi) in += hi - lo;
      }
      shares.push_back(it.length() ? static_cast<double>(in) / static_cast<double>(it.length()) : 0.0);
    }
    std::sort(shares.begin(), shares.end());
    per_iteration = fmt::format("; per iteration ({} iterations seen in the repeating kernel sequence, {} each on "
                                "average): median {:.1f}%, worst {:.1f}%",
                                shares.size(),
                                format_duration((iterations.back().end - iterations.front().begin) / iterations.size()),
                                shares[shares.size() / 2] * 100.0, shares.back() * 100.0);
  }
  std::vector<std::pair<StackId, std::pair<std::uint64_t, std::uint64_t>>> groups(by_stack.begin(), by_stack.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  Finding f = make_finding(
      "GD010", fmt::format("the host was blocked in {} synchronisations for {} of {} wall time ({:.1f}%){}; each sync "
                           "drains the GPU queue so the CPU cannot run ahead: drop per-step syncs (.item(), "
                           "cudaDeviceSynchronize, blocking copies), accumulate metrics on the device and read them "
                           "every N steps",
                           blocked.size(), format_duration(blocked_ns), format_duration(wall), share * 100.0,
                           per_iteration));
  f.stack = frames_of(t, groups.front().first);
  for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} syncs, {} blocked, from here", groups[i].second.first,
                                   format_duration(groups[i].second.second)),
                       {}, frames_of(t, groups[i].first)});
  out.push_back(std::move(f));
}

}  // namespace gpudiag
