// GD004 premature-free at run time: memory freed while copies or memsets on
// another stream still used it, copies, memsets, host accesses or the fault
// a program died of inside a freed range (not work queued on the freeing
// stream before the free, which the free is ordered after), and double frees. And through the
// pointers each kernel was given: a block freed on another stream than the
// launch's with nothing that ordered the launch before the free, a launch
// given a pointer into a block already freed, and a PyTorch tensor whose
// block the caching allocator made free again while a launch on another
// stream still used it (from its allocator history).
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core/cached_block_reuse.h"
#include "core/stream_orderings.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

struct Touch {
  std::uint64_t start_ns, end_ns, addr, bytes, stream;
  std::int32_t device;
  StackId stack;
  const char* what;
  std::uint64_t issued_ns;  // when the program asked for it: its call's start, else start_ns
};

std::vector<Touch> device_touches(const Trace& t) {
  // A copy or memset runs when its stream reaches it; its call says when it was queued.
  std::unordered_map<std::uint64_t, std::uint64_t> called;  // correlation -> start of the call
  for (const ApiCall& a : t.api_calls)
    if (a.correlation != 0) called.try_emplace(a.correlation, a.start_ns);
  const auto issued = [&](std::uint64_t correlation, std::uint64_t start_ns) {
    const auto it = correlation != 0 ? called.find(correlation) : called.end();
    return it != called.end() ? std::min(it->second, start_ns) : start_ns;
  };
  std::vector<Touch> out;
  for (const Memcpy& c : t.memcpys) {
    const std::uint64_t at = issued(c.correlation, c.start_ns);
    if (!is_host(c.dst_kind)) out.push_back({c.start_ns, c.end_ns, c.dst, c.bytes, c.stream, c.device, c.stack, "copy into", at});
    if (!is_host(c.src_kind)) out.push_back({c.start_ns, c.end_ns, c.src, c.bytes, c.stream, c.device, c.stack, "copy from", at});
  }
  for (const Memset& m : t.memsets)
    out.push_back({m.start_ns, m.end_ns, m.addr, m.bytes, m.stream, m.device, m.stack, "memset of",
                   issued(m.correlation, m.start_ns)});
  return out;
}

Finding use_after_free(const DetectContext& ctx, const Block& b, std::uint64_t addr, std::uint64_t time, StackId stack,
                       std::string_view what) {
  const Trace& t = ctx.trace;
  Finding f = make_finding(ctx, fmt::format("{} 0x{:x}, inside {} that was freed {} earlier; the memory may "
                                            "already belong to another allocation: keep the buffer alive "
                                            "until every use of it is done",
                                            what, addr, format_bytes(b.bytes), format_duration(time - b.free_ns)));
  f.stack = frames_of(t, stack);
  f.notes.push_back({"it was freed here", {}, frames_of(t, b.free_stack)});
  f.notes.push_back({"and allocated here", {}, frames_of(t, b.stack)});
  return f;
}


// Whether the launch that passed `a` may still have used block `b` when the
// free took effect: freed on another stream with nothing that ordered the
// launch before it, or freed while its kernel is known to have been running.
bool freed_under_launch(const KernelArg& a, const Block& b, const Kernel* k, const Orderings& orderings) {
  if (b.free_ns == kStillLive || b.free_stream == a.stream) return false;  // same stream: the free waits for it
  if (k && k->end_ns <= b.free_ns) return false;                         // it had finished
  if (b.free_stream == 0) return k != nullptr;  // a free that is not stream-ordered: only when seen running past it
  return !orderings.may_order(a.time_ns, b.free_ns, a.device, a.stream, b.free_stream);
}

// Launches given the same block from the same place, freed from the same place: one finding.
struct UnorderedFree {
  const KernelArg* first = nullptr;
  const Block* block = nullptr;
  std::uint64_t count = 0;
};

Finding unordered_free_finding(const DetectContext& ctx, const Launches& launches, const UnorderedFree& u) {
  const Trace& t = ctx.trace;
  const KernelArg& a = *u.first;
  const Block& b = *u.block;
  const Kernel* k = launches.kernel(a.correlation);
  const std::string kernel = launches.kernel_name(a.correlation);
  const std::string running = k ? fmt::format("was still running (it ended {} after the free)",
                                              format_duration(k->end_ns - b.free_ns))
                                : std::string("may still have been running (its end was not recorded)");
  const std::string times =
      u.count > 1 ? fmt::format("; it happened {} times with this kernel, parameter and free", u.count) : "";
  std::string msg =
      b.free_stream == 0
          ? fmt::format("{} at 0x{:x} was freed while kernel {}, given it as parameter {} on stream {}, {}{}. Wait "
                        "for stream {} (cudaStreamSynchronize, or an event) before freeing, or free it on stream {} "
                        "(cudaFreeAsync)",
                        format_bytes(b.bytes), b.addr, kernel, a.index, a.stream, running, times, a.stream, a.stream)
          : fmt::format("{} at 0x{:x} was freed on stream {} while kernel {}, given it as parameter {} on stream {}, "
                        "{}: nothing ordered the launch before the free (no device synchronisation, no "
                        "synchronisation of stream {} and no event wait of stream {} came between them), so stream "
                        "{} may hand the memory out again and overwrite it while the kernel reads it{}. Record an "
                        "event on stream {} after the launch and make stream {} wait for it (cudaStreamWaitEvent) "
                        "before the free, or free it on stream {}",
                        format_bytes(b.bytes), b.addr, b.free_stream, kernel, a.index, a.stream, running, a.stream,
                        b.free_stream, b.free_stream, times, a.stream, b.free_stream, a.stream);
  Finding f = make_finding(ctx, std::move(msg));
  f.stack = frames_of(t, b.free_stack);
  f.notes.push_back({fmt::format("{} was launched here, on stream {}", kernel, a.stream), {},
                     frames_of(t, launches.stack(a))});
  f.notes.push_back({"the memory was allocated here", {}, frames_of(t, b.stack)});
  return f;
}

void report_unordered_frees(const DetectContext& ctx, const Launches& launches, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const Orderings orderings(t);
  // kernel, parameter, launch site, free site
  std::map<std::tuple<std::string, std::uint32_t, StackId, StackId>, std::size_t> group_of;
  std::vector<UnorderedFree> frees;
  for (const KernelArg& a : t.kernel_args) {
    if (!is_gpu_pointer(a)) continue;
    const Block* b = block_holding(ctx.memory, a.value, a.time_ns);
    if (!b || !freed_under_launch(a, *b, launches.kernel(a.correlation), orderings)) continue;
    const auto key = std::make_tuple(launches.kernel_name(a.correlation), a.index,
                                     ctx.memory.canonical_stack(launches.stack(a)), b->free_stack);
    const auto [it, fresh] = group_of.try_emplace(key, frees.size());
    if (fresh) frees.push_back({&a, b, 0});
    ++frees[it->second].count;
  }
  for (const UnorderedFree& u : frees) out.push_back(unordered_free_finding(ctx, launches, u));
}

// The freed block a launch was given a pointer into, on any device, when no
// live block holds the address; nullptr if none.
const Block* freed_block_given(const MemoryTimeline& memory, const KernelArg& a) {
  if (block_holding(memory, a.value, a.time_ns)) return nullptr;
  for (const DeviceMemory& m : memory.devices)
    if (const Block* b = freed_block_containing(m, a.value, a.time_ns)) return b;
  return nullptr;
}

void report_freed_arguments(const DetectContext& ctx, const Launches& launches, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Use {
    const KernelArg* first;
    const Block* block;
    std::uint64_t count;
  };
  std::map<std::tuple<std::string, std::uint32_t, StackId>, std::size_t> group_of;  // kernel, parameter, launch site
  std::vector<Use> uses;
  for (const KernelArg& a : t.kernel_args) {
    if (!is_gpu_pointer(a)) continue;
    const Block* b = freed_block_given(ctx.memory, a);
    if (!b) continue;
    const auto key = std::make_tuple(launches.kernel_name(a.correlation), a.index,
                                     ctx.memory.canonical_stack(launches.stack(a)));
    const auto [it, fresh] = group_of.try_emplace(key, uses.size());
    if (fresh) uses.push_back({&a, b, 0});
    ++uses[it->second].count;
  }
  for (const Use& u : uses) {
    const KernelArg& a = *u.first;
    const std::string launches_of_it = u.count > 1 ? fmt::format(", in {} launches,", u.count) : "";
    out.push_back(use_after_free(ctx, *u.block, a.value, a.time_ns, launches.stack(a),
                                 fmt::format("kernel {} was given{} as parameter {} the address",
                                             launches.kernel_name(a.correlation), launches_of_it, a.index)));
  }
}

}  // namespace

void detect_premature_free(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const auto touches = device_touches(t);
  for (const DeviceMemory& m : ctx.memory.devices) {
    // Frees while work on another stream still touches the block: find the
    // block each copy or memset touched when it started.
    for (const Touch& w : touches) {
      if (w.device != m.device) continue;
      const Block* b = block_containing(m, w.addr, w.start_ns);
      if (!b || b->free_ns == kStillLive || w.end_ns <= b->free_ns) continue;
      if (w.stream == b->free_stream) continue;  // stream-ordered: the free waits for it
      Finding f = make_finding(
          ctx, fmt::format("{} at 0x{:x} freed while a {} it on stream {} was still running (it ended {} after the "
                           "free, which was ordered on stream {}); wait for that stream (an event, "
                           "cudaStreamWaitEvent) before freeing, or free on the stream that uses it",
                           format_bytes(b->bytes), b->addr, w.what, w.stream, format_duration(w.end_ns - b->free_ns),
                           b->free_stream));
      f.stack = frames_of(t, b->free_stack);
      f.notes.push_back({"the pending work was issued here", {}, frames_of(t, w.stack)});
      f.notes.push_back({"the memory was allocated here", {}, frames_of(t, b->stack)});
      out.push_back(std::move(f));
    }
    // Use after free.
    auto after_free = [&](std::uint64_t addr, std::uint64_t time, StackId stack, std::string_view what) {
      if (const Block* b = freed_block_containing(m, addr, time))
        out.push_back(use_after_free(ctx, *b, addr, time, stack, what));
    };
    for (const Touch& w : touches) {
      if (w.device != m.device) continue;
      // Queued before a free on its own stream, it runs before the memory is
      // reused, however late: the free is ordered after it.
      const Block* b = freed_block_containing(m, w.addr, w.start_ns);
      if (b && w.stream == b->free_stream && w.issued_ns < b->free_ns) continue;
      after_free(w.addr, w.start_ns, w.stack, w.what);
    }
    if (m.device != kHostDevice)
      for (const HostAccess& a : t.host_accesses) after_free(a.addr, a.time_ns, a.stack, "host access to");
    for (const Crash& c : t.crashes)
      if (is_memory_fault(c)) after_free(c.address, c.time_ns, c.stack, "the program died of a fault touching");
    // A caching allocator's own history (a PyTorch snapshot) frees blocks
    // it manages, never what a program freed twice.
    if (t.source == TraceSource::TorchSnapshot) continue;
    for (std::uint32_t i : m.double_frees) {
      const Free& fr = t.frees[i];
      Finding f = make_finding(ctx, fmt::format("double free of 0x{:x} on {}: it was already freed and not "
                                                "allocated again",
                                                fr.addr, t.device_label(m.device)));
      f.stack = frames_of(t, fr.stack);
      out.push_back(std::move(f));
    }
  }
  if (t.kernel_args.empty()) return;
  const Launches launches(t);
  report_unordered_frees(ctx, launches, out);
  report_freed_arguments(ctx, launches, out);
  report_cached_block_reuse(ctx, launches, out);
}

}  // namespace gpudiag
