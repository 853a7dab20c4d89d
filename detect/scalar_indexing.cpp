// GD005 scalar-indexing at run time: the host reading an array's elements
// one at a time (a loop of x[i] on a device vector, item() per element), as
// CUDA.jl's allowscalar guards; in the training loop when the trace shows
// one, start-up left out. Its signs are tiny device-to-host reads that come
// many to an iteration, or that walk an array: one after another with no GPU
// work between them, at increasing addresses of one allocation, or many in a
// row (those count after the loop too).
// One read a step (loss.item() for the progress line) is none of these: at
// most a sync in the loop (GD010), when its waits cost a share of it.
// A read blocks the host until the GPU has caught up; a small write nobody
// waits for (PyTorch's per-step scalar upload) is no such access. A copy into
// pageable memory returns only when done, whatever its API says; an
// asynchronous one into pinned memory returns at once, and holds the host
// only when it waits for it: PyTorch's item() copies into pinned memory and
// synchronises, so the copy lands while the host is in that sync, or, when
// the GPU was idle, just before: then the call its thread made next was that
// sync.
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

// Reads closer than this past the one before are elements of one array: two
// tensors or buffers lie further apart (PyTorch's allocator rounds blocks to
// 512 B, cudaMalloc aligns to 256 B at least).
constexpr std::uint64_t kElementStrideBytes = 64;

// Which reads (tiny blocking device-to-host copies, in time order) walk an
// array: each with its neighbour on the same device and no other GPU work
// between them (kernels, memsets, other copies), either at an address up to
// kElementStrideBytes further on in the same allocation (where the trace has
// addresses), or in a row of at least `in_a_row` such reads (where it has
// none). A checkpoint's scalars are read between the copies of its tensors.
std::vector<bool> walks(const Trace& t, const MemoryTimeline& memory, const std::vector<const Memcpy*>& reads,
                        std::uint64_t tiny_bytes, std::uint64_t in_a_row) {
  std::map<std::int32_t, std::vector<std::uint64_t>> work;  // other GPU work's starts, by device
  for (const Kernel& k : t.kernels) work[k.device].push_back(k.start_ns);
  for (const Memset& m : t.memsets) work[m.device].push_back(m.start_ns);
  for (const Memcpy& c : t.memcpys)
    if (c.copy != CopyKind::DtoH || c.bytes > tiny_bytes) work[c.device].push_back(c.start_ns);
  for (auto& [device, starts] : work) std::sort(starts.begin(), starts.end());
  const auto nothing_ran_between = [&](const Memcpy& a, const Memcpy& b) {
    if (a.device != b.device) return false;
    const auto it = work.find(a.device);
    if (it == work.end()) return true;
    const auto first_after = std::upper_bound(it->second.begin(), it->second.end(), a.start_ns);
    return first_after == it->second.end() || *first_after >= b.start_ns;
  };
  const auto next_element = [&](const Memcpy& a, const Memcpy& b) {
    if (a.src == 0 || b.src <= a.src || b.src - a.src > kElementStrideBytes) return false;
    const DeviceMemory* m = memory.device(a.device);
    const Block* holder = m ? block_containing(*m, a.src, a.start_ns) : nullptr;
    return !holder || holder == block_containing(*m, b.src, b.start_ns);
  };
  std::vector<bool> walking(reads.size(), false);
  for (std::size_t i = 0, row = 0; i < reads.size(); i = row) {
    for (row = i + 1; row < reads.size() && nothing_ran_between(*reads[row - 1], *reads[row]); ++row) {
    }
    if (row - i >= in_a_row)
      std::fill(walking.begin() + static_cast<std::ptrdiff_t>(i), walking.begin() + static_cast<std::ptrdiff_t>(row), true);
    for (std::size_t k = i + 1; k < row; ++k)
      if (next_element(*reads[k - 1], *reads[k])) walking[k - 1] = walking[k] = true;
  }
  return walking;
}

}  // namespace

void detect_scalar_indexing(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const DetectOptions& o = ctx.options;
  std::vector<Interval> waits;
  for (const Sync& s : t.syncs)
    if (host_waits(s.kind)) waits.push_back({s.start_ns, std::max(s.start_ns, s.end_ns)});
  waits = merge_intervals(std::move(waits));
  auto waited_for = [&](std::uint64_t landed) {
    auto after = std::upper_bound(waits.begin(), waits.end(), landed,
                                  [](std::uint64_t at, const Interval& w) { return at < w.begin; });
    return after != waits.begin() && std::prev(after)->end >= landed;
  };
  // The reads from the loop's start on: those of start-up (loading, moving
  // the model) are not judged; those after the loop only where they walk an
  // array (a validation after the last step, or between epochs where the
  // loop found is one epoch's steps).
  std::optional<NextCalls> next_calls;  // built for the first copy that needs it
  std::vector<const Memcpy*> reads;
  for (const Memcpy& c : t.memcpys) {
    if (c.bytes > o.tiny_transfer_bytes || c.copy != CopyKind::DtoH || c.start_ns < ctx.phases.steady().begin) continue;
    if (c.async && c.dst_kind == MemKind::Pinned && !waited_for(c.end_ns)) {
      if (!next_calls) next_calls.emplace(t);
      if (!next_calls->synced_at_once(c)) continue;
    }
    reads.push_back(&c);
  }
  std::stable_sort(reads.begin(), reads.end(), [](const Memcpy* a, const Memcpy* b) { return a->start_ns < b->start_ns; });
  const std::vector<bool> walking = walks(t, ctx.memory, reads, o.tiny_transfer_bytes, o.tiny_reads_per_iteration);
  std::vector<const Memcpy*> in_loop, walks_after;
  for (std::size_t i = 0; i < reads.size(); ++i)
    if (ctx.phases.in_steady_state(reads[i]->start_ns)) in_loop.push_back(reads[i]);
    else if (walking[i]) walks_after.push_back(reads[i]);
  const std::size_t walks_in_loop = static_cast<std::size_t>(std::count(walking.begin(), walking.end(), true)) -
                                    walks_after.size();
  // A loop that logs a few scalars a step (loss, accuracy, learning rate)
  // reads fewer than tiny_reads_per_iteration; one that walks an array reads
  // as many as it has elements.
  const double per_iteration = ctx.phases.has_loop() ? static_cast<double>(in_loop.size()) /
                                                           static_cast<double>(ctx.phases.iterations.size())
                                                     : 0.0;
  const bool in_the_loop = in_loop.size() >= o.tiny_transfer_count &&
                           (per_iteration >= static_cast<double>(o.tiny_reads_per_iteration) ||
                            walks_in_loop >= o.tiny_transfer_count);
  std::vector<const Memcpy*> judged = in_loop;
  if (!in_the_loop) {  // the walks alone, wherever after start-up
    judged.clear();
    for (std::size_t i = 0; i < reads.size(); ++i)
      if (walking[i]) judged.push_back(reads[i]);
    if (judged.size() < o.tiny_transfer_count) return;
  }

  struct Group {
    std::uint64_t count = 0, ns = 0;
  };
  std::map<StackId, Group> by_stack;
  std::uint64_t ns = 0;
  for (const Memcpy* c : judged) {
    ns += c->end_ns - c->start_ns;
    Group& g = by_stack[ctx.memory.canonical_stack(c->stack)];
    ++g.count;
    g.ns += c->end_ns - c->start_ns;
  }
  std::vector<std::pair<StackId, Group>> groups(by_stack.begin(), by_stack.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  const std::string where =
      !in_the_loop ? " one element after another, with no GPU work between the reads"
      : ctx.phases.has_loop() ? fmt::format(" in the training loop ({:.1f} per iteration)", per_iteration)
                              : std::string();
  Finding f = make_finding(
      ctx, fmt::format("the host read device memory {} times{}, at most {} B each ({} of copy time, plus a launch "
                       "and a wait for the GPU per read): this is element-by-element access to device memory; "
                       "keep the values on the device (accumulate metrics there) and read them once, or copy the "
                       "whole array once",
                       judged.size(), where, o.tiny_transfer_bytes, format_duration(ns)));
  f.stack = frames_of(t, groups.front().first);
  for (std::size_t i = 0; i < groups.size() && i < o.max_groups; ++i)
    f.notes.push_back({fmt::format("{} tiny copies from this stack", groups[i].second.count), {},
                       frames_of(t, groups[i].first)});
  out.push_back(std::move(f));
}

}  // namespace gpudiag
