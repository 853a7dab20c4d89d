#include "cached_block_reuse.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "stream_orderings.h"

namespace gpudiag {
namespace {

// PyTorch's caching allocator: a tensor dropped on the stream it was made on
// leaves its block free again at once for that stream, unless record_stream
// named the other streams that use it (the allocator then waits for their
// work). A launch on another stream given the block, that nothing ordered
// before the block was free again and that was not seen finished by then,
// may read what the next tensor made there writes. PyTorch creates its
// streams non-blocking: only a wait orders them.
struct CachedReuse {
  const KernelArg* first = nullptr;
  const CachedBlock* block = nullptr;
  std::uint64_t count = 0;
};

// Each launch's argument with the cached block it fell in when it was made
// (allocated, not yet dropped), in one sweep through time.
template <class Visit>
void arguments_in_cached_blocks(const Trace& t, Visit visit) {
  struct Step {
    std::uint64_t time;
    int what;  // 0 allocated, 1 launch, 2 dropped: a block dropped at a launch's time still holds it
    std::uint32_t index;
  };
  std::vector<Step> steps;
  for (std::uint32_t i = 0; i < t.cached_blocks.size(); ++i) {
    steps.push_back({t.cached_blocks[i].alloc_ns, 0, i});
    if (t.cached_blocks[i].free_requested_ns != CachedBlock::kNever)
      steps.push_back({t.cached_blocks[i].free_requested_ns, 2, i});
  }
  for (std::uint32_t i = 0; i < t.kernel_args.size(); ++i)
    if (is_gpu_pointer(t.kernel_args[i])) steps.push_back({t.kernel_args[i].time_ns, 1, i});
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return std::tie(a.time, a.what, a.index) < std::tie(b.time, b.what, b.index);
  });
  std::map<std::pair<std::int32_t, std::uint64_t>, std::uint32_t> live;  // (device, address) -> block
  for (const Step& s : steps) {
    if (s.what == 1) {
      const KernelArg& a = t.kernel_args[s.index];
      auto it = live.upper_bound({a.device, a.value});
      if (it == live.begin()) continue;
      --it;
      const CachedBlock& b = t.cached_blocks[it->second];
      if (it->first.first == a.device && a.value < b.addr + b.bytes) visit(a, b);
      continue;
    }
    const CachedBlock& b = t.cached_blocks[s.index];
    if (s.what == 0) {
      live[{b.device, b.addr}] = s.index;
    } else if (const auto it = live.find({b.device, b.addr}); it != live.end() && it->second == s.index) {
      live.erase(it);
    }
  }
}

Finding cached_reuse_finding(const DetectContext& ctx, const Launches& launches, const CachedReuse& u) {
  const Trace& t = ctx.trace;
  const KernelArg& a = *u.first;
  const CachedBlock& b = *u.block;
  const Kernel* k = launches.kernel(a.correlation);
  const std::string kernel = launches.kernel_name(a.correlation);
  const std::string running = k ? fmt::format("was still running (it ended {} after that)", format_duration(k->end_ns - b.free_ns))
                                : std::string("may still have been running (its end was not recorded)");
  const std::string times =
      u.count > 1 ? fmt::format("; it happened {} times with this kernel, parameter and drop", u.count) : "";
  Finding f = make_finding(
      ctx,
      fmt::format("a tensor of {} at 0x{:x}, made on stream {}, was dropped and PyTorch's caching allocator made its "
                  "memory free again for stream {} while kernel {}, given it as parameter {} on stream {}, {}: nothing "
                  "ordered the launch before it, so the next tensor made on stream {} may take the memory and "
                  "overwrite what the kernel reads{}. Call tensor.record_stream() with the stream that uses it "
                  "before dropping it (the allocator then waits for that stream's work), or keep the tensor alive "
                  "until stream {} waits for stream {} (wait_stream)",
                  format_bytes(b.bytes), b.addr, b.stream, b.stream, kernel, a.index, a.stream, running, b.stream,
                  times, b.stream, a.stream));
  f.stack = frames_of(t, b.free_stack);
  f.notes.push_back({fmt::format("{} was launched here, on stream {}", kernel, a.stream), {},
                     frames_of(t, launches.stack(a))});
  f.notes.push_back({"the tensor was made here", {}, frames_of(t, b.stack)});
  return f;
}

}  // namespace

void report_cached_block_reuse(const DetectContext& ctx, const Launches& launches, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.cached_blocks.empty()) return;
  const Orderings orderings(t);
  // kernel, parameter, launch site, drop site
  std::map<std::tuple<std::string, std::uint32_t, StackId, StackId>, std::size_t> group_of;
  std::vector<CachedReuse> reuses;
  arguments_in_cached_blocks(t, [&](const KernelArg& a, const CachedBlock& b) {
    if (b.free_ns == CachedBlock::kNever || !b.stream_known || a.stream == b.stream) return;
    if (const Kernel* k = launches.kernel(a.correlation); k && k->end_ns <= b.free_ns) return;
    if (orderings.waited_between(a.time_ns, b.free_ns, a.device, a.stream, b.stream)) return;
    const auto key = std::make_tuple(launches.kernel_name(a.correlation), a.index,
                                     ctx.memory.canonical_stack(launches.stack(a)),
                                     ctx.memory.canonical_stack(b.free_stack));
    const auto [it, fresh] = group_of.try_emplace(key, reuses.size());
    if (fresh) reuses.push_back({&a, &b, 0});
    ++reuses[it->second].count;
  });
  for (const CachedReuse& u : reuses) out.push_back(cached_reuse_finding(ctx, launches, u));
}

}  // namespace gpudiag
