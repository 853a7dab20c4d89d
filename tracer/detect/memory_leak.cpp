// GD007 memory-leak at run time: allocations still live when the traced
// process ended, grouped by the stack that made them. Only for whole-process
// recordings (.gdtrace, traces built in code): a profiler window (Kineto,
// nsys) ends while the program still legitimately holds its memory.
#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_memory_leak(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.source == TraceSource::Kineto || t.source == TraceSource::Nsys) return;
  for (const DeviceMemory& m : ctx.memory.devices) {
    if (m.leaked.empty()) continue;
    const auto groups = group_by_stack(m, m.leaked);
    std::size_t shown = 0;
    std::uint64_t rest_bytes = 0, rest_count = 0;
    for (const StackGroup& g : groups) {
      if (shown >= ctx.options.max_groups) {
        rest_bytes += g.bytes;
        rest_count += g.count;
        continue;
      }
      ++shown;
      const Block& b = m.blocks[g.first_block];
      Finding f = make_finding(
          "GD007", fmt::format("{} in {} allocation{} on {} never freed (first at 0x{:x}, {} {}); free it on every "
                               "path, or hold it in an owner (RAII, a tensor) that frees it",
                               format_bytes(g.bytes), g.count, g.count == 1 ? "" : "s",
                               m.device == kHostDevice ? std::string("the host") : fmt::format("device {}", m.device),
                               b.addr, to_string(b.kind), "memory"));
      f.stack = frames_of(t, g.stack);
      out.push_back(std::move(f));
    }
    if (rest_count > 0) {
      Finding f = make_finding("GD007", fmt::format("and {} more in {} allocations from {} other stacks never freed",
                                                    format_bytes(rest_bytes), rest_count, groups.size() - shown));
      out.push_back(std::move(f));
    }
  }
}

}  // namespace gpudiag
