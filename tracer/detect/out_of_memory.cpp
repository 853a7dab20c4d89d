// GD008 out-of-memory at run time: at each failed request, who held the
// memory (live allocations by stack), the peak against capacity, and how
// much the allocator had reserved but not handed out (fragmentation/cache).
#include <algorithm>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_out_of_memory(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  for (const OutOfMemory& oom : t.ooms) {
    const DeviceMemory* m = ctx.memory.device(oom.device);
    const std::uint64_t capacity = oom.capacity_bytes ? oom.capacity_bytes : (m ? m->capacity_bytes : 0);
    const std::uint64_t live = m ? live_bytes_at(*m, oom.time_ns) : 0;
    std::string msg = fmt::format("out of memory on device {}: a request for {} failed with {} live", oom.device,
                                  format_bytes(oom.requested_bytes), format_bytes(live));
    if (capacity) msg += fmt::format(" of {} capacity", format_bytes(capacity));
    if (oom.free_bytes) msg += fmt::format(" ({} reported free)", format_bytes(oom.free_bytes));
    if (m) msg += fmt::format("; the trace's peak was {}", format_bytes(m->peak_bytes));
    msg += "; free what is no longer needed (see the largest holders below), use a smaller batch, or checkpoint "
           "activations";
    Finding f = make_finding("GD008", std::move(msg));
    f.stack = frames_of(t, oom.stack);
    if (m) {
      // Reserved but unallocated memory at the failure: the caching allocator's
      // pool, or fragmentation when the request still did not fit.
      const MemoryCounter* last = nullptr;
      for (const MemoryCounter& c : m->counters)
        if (c.time_ns <= oom.time_ns) last = &c;
      if (last && last->reserved_bytes > last->allocated_bytes)
        f.notes.push_back({fmt::format("the allocator had {} reserved but not allocated (cached or fragmented)",
                                       format_bytes(last->reserved_bytes - last->allocated_bytes)),
                           {}, {}});
      std::vector<std::uint32_t> live_blocks;
      for (std::uint32_t i = 0; i < m->blocks.size(); ++i)
        if (m->blocks[i].live_at(oom.time_ns)) live_blocks.push_back(i);
      const auto groups = group_by_stack(*m, live_blocks);
      for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
        f.notes.push_back({fmt::format("{} live in {} allocation{} from here", format_bytes(groups[i].bytes),
                                       groups[i].count, groups[i].count == 1 ? "" : "s"),
                           {}, frames_of(t, groups[i].stack)});
    }
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
