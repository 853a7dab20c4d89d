// GD007 memory-leak at run time. In a run whose training loop shows: live
// memory that grows from iteration to iteration ("memory grows every
// epoch"), with the stacks of what the loop allocated and kept. Memory held
// until exit without growing is not a leak: a caching allocator's segments
// (PyTorch's, cudaMallocAsync pools, gdrt's cuda backend), parameters and
// optimiser state. Without a loop: allocations still live when the process
// ended, grouped by the stack that made them, except a caching allocator's
// and a library handle's (known by their frames or PyTorch's allocator
// history), unless it died of a signal
// (it never reached its frees; the crash is the finding) or its context died
// of a sticky kernel error such as 700 (every later call fails, cudaFree
// included; the error is the finding). Only for whole-process
// recordings (.gdtrace, traces built in code): a profiler window (Kineto,
// nsys) ends while the program still legitimately holds its memory, and so
// does the detail of a bounded trace (--max-size) without a loop: its leak
// is a call site whose memory still held when the detail begins was
// allocated all through the part it dropped (also when its loop is too
// short to show growth). A PyTorch
// memory snapshot, taken while its program ran: a call site whose live
// memory grows through the allocator's history.
#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

namespace {

std::string where(const Trace& t, std::int32_t device) {
  return device == kHostDevice ? std::string("the host") : t.device_label(device);
}

// Iterations after the first that a leak must be seen growing in: the first
// makes what every later one reuses (gradients, optimizer state, workspaces).
constexpr std::size_t kMinGrowingIterations = 3;

// The iterations' boundaries (each start, then the last end) on the host's
// clock, where allocations happen.
std::vector<std::uint64_t> host_boundaries(const RunPhases& phases) {
  std::vector<std::uint64_t> at;
  for (const Interval& it : phases.host_iterations) at.push_back(it.begin);
  at.push_back(phases.host_iterations.back().end);
  return at;
}

// Live bytes measured at successive points: a leak grows them by at least
// 1 MiB overall, between at least half of the points (and `min_rises` of
// them), and never gives any back. How many steps between points rose, when
// they grow so; 0 when they do not.
std::size_t rises_of_a_leak(std::span<const std::uint64_t> live, std::size_t min_rises) {
  if (live.size() < 2) return 0;
  std::size_t grew = 0, shrank = 0;
  for (std::size_t i = 1; i < live.size(); ++i) grew += live[i] > live[i - 1], shrank += live[i] < live[i - 1];
  const std::uint64_t growth = live.back() > live.front() ? live.back() - live.front() : 0;
  const bool leak = growth >= (1u << 20) && shrank == 0 && grew * 2 >= live.size() - 1 && grew >= min_rises;
  return leak ? grew : 0;
}

// Live memory at the start of each iteration after the first and at the end
// of the last.
void report_growth(const DetectContext& ctx, const DeviceMemory& m, std::vector<Finding>& out) {
  if (ctx.phases.host_iterations.size() < kMinGrowingIterations + 1) return;
  const std::vector<std::uint64_t> bounds = host_boundaries(ctx.phases);
  std::vector<std::uint64_t> live;
  for (std::size_t i = 1; i < bounds.size(); ++i) live.push_back(live_bytes_at(m, bounds[i]));
  if (rises_of_a_leak(live, 0) == 0) return;
  const std::size_t measured = live.size() - 1;
  const std::uint64_t growth = live.back() - live.front();
  // What the loop allocated and still held when the last iteration ended.
  const Interval loop{bounds.front(), bounds.back()};
  std::vector<std::uint32_t> kept;
  for (std::uint32_t i = 0; i < m.blocks.size(); ++i)
    if (m.blocks[i].alloc_ns >= loop.begin && m.blocks[i].live_at(loop.end)) kept.push_back(i);
  Finding f = make_finding(
      ctx, fmt::format("live memory on {} grew by {} over {} iterations ({} per iteration, from {} to {}): "
                       "something the loop allocates every iteration is kept (a tensor appended to a list, a "
                       "loss kept with its graph, a buffer never freed); at this rate the run ends out of memory",
                       where(ctx.trace, m.device), format_bytes(growth), measured, format_bytes(growth / measured),
                       format_bytes(live.front()), format_bytes(live.back())));
  const auto groups = group_by_stack(m, kept);
  if (!groups.empty()) f.stack = frames_of(ctx.trace, groups.front().stack);
  for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} in {} allocation{} made in the loop and still live, from here",
                                   format_bytes(groups[i].bytes), groups[i].count, groups[i].count == 1 ? "" : "s"),
                       {}, frames_of(ctx.trace, groups[i].stack)});
  out.push_back(std::move(f));
}

// Functions that keep memory on purpose: named within (PyTorch's allocators
// and handle pools), or from their start (gdrt's allocator, the libraries'
// handle constructors).
constexpr std::string_view kKeeperParts[] = {"CachingAllocator", "CachingHostAllocator", "CuDNNHandle", "CublasHandle"};
constexpr std::string_view kKeeperPrefixes[] = {"gdrt::cuda::CudaAllocator::", "cudnnCreate", "cublasCreate",
                                                "cublasLtCreate"};
// Modules whose device memory is all kept so: c10_cuda allocates only
// through its allocators, cuDNN and cuBLAS for their handles.
constexpr std::string_view kKeeperModules[] = {"libc10_cuda.", "libcudnn", "libcublas"};

bool keeps_memory(std::string_view function) {
  return std::any_of(std::begin(kKeeperParts), std::end(kKeeperParts),
                     [&](std::string_view part) { return function.find(part) != std::string_view::npos; }) ||
         std::any_of(std::begin(kKeeperPrefixes), std::end(kKeeperPrefixes),
                     [&](std::string_view prefix) { return function.starts_with(prefix); });
}

// Memory kept until exit on purpose, never to be freed: a caching
// allocator's, for reuse (PyTorch's device and pinned-host allocators,
// gdrt's cuda device), known by the allocator in the allocation's stack or,
// with stacks off, by PyTorch's own history of the blocks it cut from the
// segment; and a cuDNN or cuBLAS handle's, which PyTorch and gdrt keep for
// the life of the process.
bool held_until_exit_on_purpose(const Trace& t, const DeviceMemory& m, const Block& b) {
  if (b.stack < t.stacks.size())
    for (const StackFrame& f : t.stacks[b.stack].frames) {
      if (keeps_memory(t.str(f.function))) return true;
      const std::string_view file = module_file(t, f);
      if (std::any_of(std::begin(kKeeperModules), std::end(kKeeperModules),
                      [&](std::string_view module) { return file.starts_with(module); }))
        return true;
      // The pinned memory of libtorch_cuda is its host allocator's.
      if (b.kind == MemKind::Pinned && file.starts_with("libtorch_cuda.")) return true;
    }
  return std::any_of(t.cached_blocks.begin(), t.cached_blocks.end(), [&](const CachedBlock& c) {
    return c.device == m.device && c.addr < b.addr + b.bytes && b.addr < c.addr + c.bytes;
  });
}


// Live bytes by call site, of the blocks `counted` accepts, at `begin` and
// at the ends of `kSpans` equal spans from there to `end`.
constexpr std::size_t kSpans = 16;
struct LiveBySite {
  std::uint64_t begin = 0, end = 0;
  std::map<StackId, std::array<std::uint64_t, kSpans + 1>> at;
};

template <class Counted>
LiveBySite live_by_call_site(const DeviceMemory& m, std::uint64_t begin, std::uint64_t end, Counted counted) {
  LiveBySite live{begin, end, {}};
  for (const Block& b : m.blocks) {
    if (b.stack == kNoStack || !counted(b)) continue;
    auto& at = live.at[b.stack];
    for (std::size_t k = 0; k <= kSpans; ++k)
      if (b.live_at(begin + (end - begin) * k / kSpans)) at[k] += b.bytes;
  }
  return live;
}

// What a call site's live memory did from the first span it held any.
struct Growth {
  std::string growth, over, from, to;  // bytes, time, bytes, bytes
  std::size_t rises = 0, spans = 0;
};

// A finding, worded by `words` from its Growth, for each call site whose
// live memory grows span after span and never shrinks.
template <class Words>
void report_call_sites_that_grow(const DetectContext& ctx, const LiveBySite& live, Words words,
                                 std::vector<Finding>& out) {
  for (const auto& [stack, at] : live.at) {
    std::size_t first = 0;
    while (first <= kSpans && at[first] == 0) ++first;
    if (first >= kSpans) continue;
    const std::size_t rises = rises_of_a_leak(std::span(at).subspan(first), 3);
    if (rises == 0) continue;
    const std::size_t spans = kSpans - first;
    Finding f = make_finding(ctx, words(Growth{format_bytes(at[kSpans] - at[first]),
                                               format_duration((live.end - live.begin) * spans / kSpans),
                                               format_bytes(at[first]), format_bytes(at[kSpans]), rises, spans}));
    f.stack = frames_of(ctx.trace, stack);
    out.push_back(std::move(f));
  }
}

// A memory snapshot's history has no kernels to find a loop by, and it
// was taken while the program ran: what a call site holds at its end is no
// leak. One whose live memory grows through the history, span after span,
// and never shrinks, is.
void report_growth_by_call_site(const DetectContext& ctx, const DeviceMemory& m, std::vector<Finding>& out) {
  const std::uint64_t begin = ctx.trace.begin_ns(), end = ctx.trace.end_ns();
  if (end <= begin || m.blocks.empty()) return;
  const auto words = [&](const Growth& g) {
    return fmt::format("live memory on {} allocated here grew by {} over the last {} of the history (from {} to {}), "
                       "in {} of its {} spans and never less: something keeps what this line allocates (a tensor "
                       "appended to a list, a loss kept with its graph, a cache without a bound); at this rate the "
                       "run ends out of memory",
                       where(ctx.trace, m.device), g.growth, g.over, g.from, g.to, g.rises, g.spans);
  };
  report_call_sites_that_grow(ctx, live_by_call_site(m, begin, end, [](const Block&) { return true; }), words, out);
}

// The detail of a bounded trace: of the part dropped before it, the trace
// kept only the allocations still live when the detail begins. What a step
// allocated and freed there is gone, so live memory there is not known, and
// the detail's loop may be too short to grow by a leak's measure. What was
// kept is: a call site that allocated it span after span through the
// dropped part leaks, where one that allocated it once (parameters,
// optimiser state) does not. A caching allocator keeps its segments so on
// purpose.
void report_growth_kept_across_the_dropped_part(const DetectContext& ctx, const DeviceMemory& m,
                                                std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const std::uint64_t begin = t.begin_ns(), end = t.part_detail_from_ns;
  if (end <= begin || m.blocks.empty()) return;
  const auto kept = [&](const Block& b) { return b.live_at(end) && !held_until_exit_on_purpose(t, m, b); };
  const auto words = [&](const Growth& g) {
    return fmt::format("memory on {} allocated here and still held when the trace's detail begins grew by {} over "
                       "the {} before it (from {} to {}), in {} of its {} spans: something the run allocates again "
                       "and again is kept (a tensor appended to a list, a loss kept with its graph, a buffer never "
                       "freed); at this rate the run ends out of memory",
                       where(t, m.device), g.growth, g.over, g.from, g.to, g.rises, g.spans);
  };
  report_call_sites_that_grow(ctx, live_by_call_site(m, begin, end, kept), words, out);
}

}  // namespace

void detect_memory_leak(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.source == TraceSource::TorchSnapshot) {
    for (const DeviceMemory& m : ctx.memory.devices) report_growth_by_call_site(ctx, m, out);
    return;
  }
  if (t.source == TraceSource::Kineto || t.source == TraceSource::Nsys) return;
  if (ctx.phases.has_loop()) {
    for (const DeviceMemory& m : ctx.memory.devices) {
      const std::size_t found = out.size();
      report_growth(ctx, m, out);
      if (out.size() == found && t.detail_of_bounded()) report_growth_kept_across_the_dropped_part(ctx, m, out);
    }
    return;
  }
  if (!t.crashes.empty()) return;
  // A bounded trace whose detail shows no loop: its run went on before, and
  // what is live at the end (parameters, optimiser state) is what a loop in
  // the dropped part holds. Only what grew through the run is a leak.
  if (t.detail_of_bounded()) {
    for (const DeviceMemory& m : ctx.memory.devices) report_growth_kept_across_the_dropped_part(ctx, m, out);
    return;
  }
  if (std::any_of(t.api_calls.begin(), t.api_calls.end(), [](const ApiCall& a) { return is_kernel_error(a.status); }))
    return;
  // A trace that lacks its end shows only that a block was not freed by the
  // end of the recording; its frees may be in the part that is missing.
  const bool whole_run = t.complete();
  const std::string_view unfreed = whole_run ? "never freed" : "not freed by the end of the recording";
  const auto severity = [&](Finding& f) {
    if (!whole_run) f.severity = Severity::Note;
  };
  for (const DeviceMemory& m : ctx.memory.devices) {
    std::vector<std::uint32_t> leaked;
    for (std::uint32_t i : m.leaked)
      if (!held_until_exit_on_purpose(t, m, m.blocks[i])) leaked.push_back(i);
    if (leaked.empty()) continue;
    const auto groups = group_by_stack(m, leaked);
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
      Finding f =
          make_finding(ctx, fmt::format("{} in {} allocation{} on {} {} (first at 0x{:x}, {} {}); free it on every "
                                        "path, or hold it in an owner (RAII, a tensor) that frees it",
                                        format_bytes(g.bytes), g.count, g.count == 1 ? "" : "s",
                                        where(ctx.trace, m.device), unfreed, b.addr, to_string(b.kind), "memory"));
      f.stack = frames_of(t, g.stack);
      severity(f);
      out.push_back(std::move(f));
    }
    if (rest_count > 0) {
      Finding f = make_finding(ctx, fmt::format("and {} more in {} allocations from {} other stacks {}",
                                                format_bytes(rest_bytes), rest_count, groups.size() - shown, unfreed));
      severity(f);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace gpudiag
