// GD009 pageable-async-copy at run time: asynchronous copies whose host side
// is pageable memory. CUDA stages them through a pinned buffer and the call
// returns only when the source is consumed: they do not overlap with compute.
// Judged in the training loop when the trace shows one: the copies of
// setting up (the model moved to the GPU once) overlap with nothing anyway.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_pageable_async_copy(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0, bytes = 0, ns = 0;
  };
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
  }
  std::vector<std::pair<std::pair<StackId, CopyKind>, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  for (const auto& [key, g] : sorted) {
    Finding f = make_finding(
        "GD009", fmt::format("{} asynchronous {} cop{} ({} in {}) with a pageable host buffer: they run synchronously "
                             "and cannot overlap with compute; allocate the host buffer pinned (cudaMallocHost, "
                             "pin_memory=True in the DataLoader)",
                             g.count, to_string(key.second), g.count == 1 ? "y" : "ies", format_bytes(g.bytes),
                             format_duration(g.ns)));
    f.stack = frames_of(t, key.first);
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
