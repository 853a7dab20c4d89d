// GD010 sync-in-loop at run time: the host blocked in synchronisations
// (device, stream, event syncs; blocking copies show as their own sync in the
// trace where the source records one) at least once per iteration of the
// training loop, at a cost, or several times in every iteration. Where no
// loop shows nothing is said: a program that waits for its GPU does not
// thereby wait in a loop. The syncs of start-up (cuDNN autotuning, moving the
// model) are not the loop's, and neither are those of a thread that launches
// no work in the loop: a data loader worker whose blocking copy waits for the
// device stalls itself, not the loop.
//
// What a sync costs is not how long the host waits in it. In an iteration of
// length T the host runs for H and is blocked for B = T - H, the GPU is busy
// for G. Without the syncs the iteration could at best take max(H, G), so
// they cost at most T - max(H, G) = min(B, T - G): the host's blocked time,
// but no more than the GPU's idle time. A GPU-bound loop that reads
// loss.item() once a step blocks the host for most of the step while the GPU
// is busy throughout: the wait costs nothing. A loop whose host launches the
// work pays for every sync, since the GPU drains while the host waits.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {

namespace {

// Threads whose syncs are not the loop's: they made API calls but launched
// no kernel inside `window`. Only said where the trace numbers the threads
// of syncs and of calls alike, seen in a sync on a launching thread: a
// format may name its threads its own way, or not at all.
std::set<std::uint32_t> threads_outside_the_loop(const Trace& t, const Interval& window) {
  std::set<std::uint32_t> calling, launching;
  for (const ApiCall& a : t.api_calls) {
    calling.insert(a.tid);
    if (t.is_launch(a) && a.start_ns >= window.begin && a.start_ns < window.end) launching.insert(a.tid);
  }
  const bool alike = std::any_of(t.syncs.begin(), t.syncs.end(), [&](const Sync& s) { return launching.count(s.tid); });
  if (!alike) return {};
  std::set<std::uint32_t> outside;
  for (std::uint32_t tid : calling)
    if (!launching.count(tid)) outside.insert(tid);
  return outside;
}

// The union of the GPUs' busy time (a CPU
// device's work is the host's own, not a GPU's).
std::vector<Interval> busy_on_any_device(const std::vector<GpuTime>& gpu_time) {
  std::vector<Interval> busy;
  for (const GpuTime& g : gpu_time)
    if (g.device != kHostDevice) busy.insert(busy.end(), g.busy.begin(), g.busy.end());
  return merge_intervals(std::move(busy));
}

}  // namespace

void detect_sync_in_loop(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const RunPhases& phases = ctx.phases;
  // One iteration (a single profiled step) shows no loop to wait in every
  // iteration of.
  if (phases.iterations.size() < 2) return;
  // On the host's clock, where it waits.
  const Interval window = phases.host_steady();
  const std::set<std::uint32_t> outside_the_loop = threads_outside_the_loop(t, window);
  std::vector<Interval> blocked;
  std::map<StackId, std::pair<std::uint64_t, std::uint64_t>> by_stack;  // count, ns
  for (const Sync& s : t.syncs) {
    if (!host_waits(s.kind) || s.end_ns <= s.start_ns) continue;
    if (outside_the_loop.count(s.tid)) continue;
    const std::uint64_t lo = std::max(s.start_ns, window.begin), hi = std::min(s.end_ns, window.end);
    if (lo >= hi) continue;
    blocked.push_back({lo, hi});
    auto& g = by_stack[ctx.memory.canonical_stack(s.stack)];
    ++g.first;
    g.second += hi - lo;
  }
  const std::uint64_t wall = window.length();
  if (blocked.empty() || wall == 0) return;
  const auto merged = merge_intervals(blocked);
  const std::uint64_t blocked_ns = total_length(merged);
  const double share = static_cast<double>(blocked_ns) / static_cast<double>(wall);
  const std::vector<Interval> gpu_busy = busy_on_any_device(ctx.gpu_time);
  // In most iterations (not a checkpoint's syncs in one of them), and either
  // costly or many: under a profiler the host is the bottleneck and each
  // sync waits little, yet syncs after every layer still serialise the loop.
  const auto& iterations = phases.host_iterations;
  std::vector<std::uint64_t> sync_starts;
  for (const Interval& b : blocked) sync_starts.push_back(b.begin);
  std::sort(sync_starts.begin(), sync_starts.end());
  std::vector<double> shares;
  std::vector<std::size_t> syncs_in;
  std::size_t with_sync = 0;
  std::uint64_t cost_ns = 0, idle_ns = 0;
  for (const Interval& it : iterations) {
    syncs_in.push_back(static_cast<std::size_t>(
        std::lower_bound(sync_starts.begin(), sync_starts.end(), it.end) -
        std::lower_bound(sync_starts.begin(), sync_starts.end(), it.begin)));
    const std::uint64_t in = length_within(merged, it);
    const std::uint64_t idle = it.length() - std::min(it.length(), length_within(gpu_busy, it));
    cost_ns += std::min(in, idle);
    idle_ns += idle;
    with_sync += in > 0;
    shares.push_back(it.length() ? static_cast<double>(in) / static_cast<double>(it.length()) : 0.0);
  }
  const std::uint64_t iterations_ns = wall;
  const double cost_share = static_cast<double>(cost_ns) / static_cast<double>(std::max<std::uint64_t>(iterations_ns, 1));
  // A sync in each iteration: not one long wait that the iterations ran
  // under (a loop queued at once and waited for at its end, whose
  // iterations are the GPU's where their launches are not in the trace).
  if (with_sync * 2 <= iterations.size() || blocked.size() * 2 < iterations.size()) return;
  // The typical iteration's count: a checkpoint's hundred syncs in one
  // iteration make no loop whose every iteration syncs.
  std::sort(syncs_in.begin(), syncs_in.end());
  const auto per_iteration_syncs = static_cast<double>(syncs_in[syncs_in.size() / 2]);
  // What the waits cost decides: a share of the loop is a warning; many
  // cheap syncs (under a profiler the host is the bottleneck and each waits
  // little) still serialise the loop, which is worth a note.
  const bool costly = cost_share >= ctx.options.sync_share;
  if (!costly && per_iteration_syncs < ctx.options.syncs_per_iteration) return;
  std::string per_iteration;
  {
    std::sort(shares.begin(), shares.end());
    per_iteration = fmt::format("; the share of each iteration the host was blocked ({} iterations from the {}, {} "
                                "each on average, {:g} sync{} in the median one): median {:.1f}%, worst {:.1f}%",
                                shares.size(), phases.source, format_duration(iterations_ns / iterations.size()),
                                per_iteration_syncs, per_iteration_syncs == 1 ? "" : "s",
                                shares[shares.size() / 2] * 100.0, shares.back() * 100.0);
  }
  std::vector<std::pair<StackId, std::pair<std::uint64_t, std::uint64_t>>> groups(by_stack.begin(), by_stack.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  Finding f = make_finding(
      ctx, fmt::format("the host was blocked in {} synchronisations for {} of {} {} ({:.1f}%), and the GPU was "
                       "idle for {:.1f}% of the loop: the syncs cost at most {:.1f}% of it, the smaller of the host's "
                       "blocked time and the GPU's idle time in each iteration, which is what the loop could gain "
                       "if the host never waited{}{}; each sync drains the GPU queue so the CPU cannot run "
                       "ahead: drop per-step syncs (.item(), cudaDeviceSynchronize, blocking copies), accumulate "
                       "metrics on the device and read them every N steps",
                       blocked.size(), format_duration(blocked_ns), format_duration(wall), "in the training loop",
                       share * 100.0,
                       100.0 * static_cast<double>(idle_ns) / static_cast<double>(std::max<std::uint64_t>(iterations_ns, 1)),
                       cost_share * 100.0, per_iteration,
                       costly ? std::string()
                              : fmt::format(", below the {:.0f}% of the loop at which this is a warning "
                                            "(--sync-share), but at least {:g} syncs an iteration "
                                            "(--syncs-per-iteration)",
                                            ctx.options.sync_share * 100.0, ctx.options.syncs_per_iteration)));
  if (!costly) f.severity = Severity::Note;
  f.stack = frames_of(t, groups.front().first);
  for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} syncs, {} blocked, from here", groups[i].second.first,
                                   format_duration(groups[i].second.second)),
                       {}, frames_of(t, groups[i].first)});
  out.push_back(std::move(f));
}

}  // namespace gpudiag
