// GD005 scalar-indexing at run time: many tiny host<->device copies, the
// trace of per-element access to device arrays (a loop of x[i] on a device
// vector, item() per element).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_scalar_indexing(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0, ns = 0;
  };
  std::map<StackId, Group> by_stack;
  std::uint64_t count = 0, ns = 0, htod = 0, dtoh = 0;
  for (const Memcpy& c : t.memcpys) {
    if (c.bytes > ctx.options.tiny_transfer_bytes || c.copy == CopyKind::DtoD || c.copy == CopyKind::PtoP ||
        c.copy == CopyKind::HtoH)
      continue;
    ++count;
    ns += c.end_ns - c.start_ns;
    htod += c.copy == CopyKind::HtoD;
    dtoh += c.copy == CopyKind::DtoH;
    Group& g = by_stack[ctx.memory.canonical_stack(c.stack)];
    ++g.count;
    g.ns += c.end_ns - c.start_ns;
  }
  if (count < ctx.options.tiny_transfer_count) return;
  std::vector<std::pair<StackId, Group>> groups(by_stack.begin(), by_stack.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  Finding f = make_finding(
      "GD005", fmt::format("{} host<->device copies of at most {} B each ({} to the device, {} to the host, {} of copy "
                           "time, plus a launch and often a sync per copy): this is element-by-element access to "
                           "device memory; move the loop into a kernel or copy the whole array once",
                           count, ctx.options.tiny_transfer_bytes, htod, dtoh, format_duration(ns)));
  f.stack = frames_of(t, groups.front().first);
  for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} tiny copies from this stack", groups[i].second.count), {},
                       frames_of(t, groups[i].first)});
  out.push_back(std::move(f));
}

}  // namespace gpudiag
