// GD009 pageable-async-copy at run time: asynchronous copies whose host side
// is pageable memory. CUDA stages them through a pinned buffer and the call
// returns only when the source is consumed: they do not overlap with compute.
// Judged in the training loop when the trace shows one: the copies of
// setting up (the model moved to the GPU once) overlap with nothing anyway.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_pageable_async_copy(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0, bytes = 0, ns = 0, blocked_ns = 0;
  };
  // What such a copy costs: a copy from the host, the time the call that
  // issued it held the host while it staged the source (where the trace has
  // the call; else the copy's own time). A copy to the host returns only
  // once all the stream's earlier work is done, and that wait is a sync's
  // (GD010), not the staging's: its own time.
  std::unordered_map<std::uint64_t, std::uint64_t> call_ns;  // correlation -> the call's duration
  for (const ApiCall& a : t.api_calls)
    if (a.correlation != 0 && a.end_ns > a.start_ns) call_ns.emplace(a.correlation, a.end_ns - a.start_ns);
  std::map<std::pair<StackId, CopyKind>, Group> groups;
  for (const Memcpy& c : t.memcpys) {
    if (!c.async || !ctx.phases.in_steady_state(c.start_ns)) continue;
    const bool pageable = (c.copy != CopyKind::DtoH && c.src_kind == MemKind::Pageable) ||
                          (c.copy != CopyKind::HtoD && c.dst_kind == MemKind::Pageable);
    if (!pageable || c.copy == CopyKind::HtoH) continue;
    Group& g = groups[{ctx.memory.canonical_stack(c.stack), c.copy}];
    ++g.count;
    g.bytes += c.bytes;
    g.ns += c.end_ns - c.start_ns;
    const auto call = c.copy == CopyKind::HtoD && c.correlation != 0 ? call_ns.find(c.correlation) : call_ns.end();
    g.blocked_ns += std::max(c.end_ns - c.start_ns, call != call_ns.end() ? call->second : 0);
  }
  if (groups.empty()) return;
  std::vector<std::pair<std::pair<StackId, CopyKind>, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  // What they cost decides: the host's time blocked in them, against the time judged.
  std::uint64_t blocked_ns = 0, bytes = 0, count = 0;
  for (const auto& [key, g] : sorted) blocked_ns += g.blocked_ns, bytes += g.bytes, count += g.count;
  const std::uint64_t window = ctx.phases.steady().length();
  const double share = window ? static_cast<double>(blocked_ns) / static_cast<double>(window) : 0.0;
  const std::string_view judged = ctx.phases.has_loop() ? "the training loop" : "the trace";
  if (share < ctx.options.pageable_share) {
    Finding f = make_finding(
        ctx, fmt::format("{} asynchronous cop{} ({}) used a pageable host buffer and held the host {}, {:.2f}% of "
                         "{}'s {}: below the {:.0f}% at which this is a warning (--pageable-share)",
                         count, count == 1 ? "y" : "ies", format_bytes(bytes), format_duration(blocked_ns),
                         share * 100.0, judged, format_duration(window), ctx.options.pageable_share * 100.0));
    f.severity = Severity::Note;
    f.stack = frames_of(t, sorted.front().first.first);
    out.push_back(std::move(f));
    return;
  }
  for (const auto& [key, g] : sorted) {
    Finding f = make_finding(
        ctx, fmt::format("{} asynchronous {} cop{} ({} in {}) with a pageable host buffer held the host {}, "
                         "{:.1f}% of {}'s {}: they run synchronously and cannot overlap with compute; allocate "
                         "the host buffer pinned (cudaMallocHost, pin_memory=True in the DataLoader)",
                         g.count, to_string(key.second), g.count == 1 ? "y" : "ies", format_bytes(g.bytes),
                         format_duration(g.ns), format_duration(g.blocked_ns),
                         window ? 100.0 * static_cast<double>(g.blocked_ns) / static_cast<double>(window) : 0.0, judged,
                         format_duration(window)));
    f.stack = frames_of(t, key.first);
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
