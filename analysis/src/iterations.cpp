#include "gpudiag/analysis/iterations.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

namespace gpudiag {
namespace {

// Starts (kernel indices) of the longest run of evenly spaced, non-overlapping
// repetitions of the `m` kernels beginning at `anchor`.
std::vector<std::size_t> evenly_spaced_repetitions(const std::vector<const Kernel*>& ks, std::size_t anchor, std::size_t m,
                                                   double max_spread) {
  // A run of one kernel, or of two alternating, repeats at any period: it
  // marks no iteration.
  std::vector<StringId> names;
  for (std::size_t j = 0; j < m; ++j) names.push_back(ks[anchor + j]->name);
  std::sort(names.begin(), names.end());
  if (std::unique(names.begin(), names.end()) - names.begin() < 3) return {};
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i + m <= ks.size();) {
    bool match = true;
    for (std::size_t j = 0; j < m && match; ++j) match = ks[i + j]->name == ks[anchor + j]->name;
    if (match) {
      starts.push_back(i);
      i += m;
    } else {
      ++i;
    }
  }
  if (starts.size() < 2) return {};
  std::vector<std::size_t> spacing;
  for (std::size_t k = 0; k + 1 < starts.size(); ++k) spacing.push_back(starts[k + 1] - starts[k]);
  std::vector<std::size_t> sorted = spacing;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double typical = static_cast<double>(sorted[sorted.size() / 2]);
  // The longest stretch whose every spacing is the typical one, give or take.
  std::size_t best_from = 0, best_len = 0;
  for (std::size_t from = 0; from < spacing.size();) {
    std::size_t to = from;
    while (to < spacing.size() && std::abs(static_cast<double>(spacing[to]) - typical) <= max_spread * typical) ++to;
    if (to - from > best_len) best_from = from, best_len = to - from;
    from = to + 1;
  }
  if (best_len == 0) return {};
  return {starts.begin() + static_cast<std::ptrdiff_t>(best_from),
          starts.begin() + static_cast<std::ptrdiff_t>(best_from + best_len + 1)};
}

// The profiler's steps of the thread that has the most (one per rank or
// thread would count each step several times), in order, a step nested in
// another left out.
std::vector<Interval> profiler_steps(const Trace& trace) {
  std::map<std::uint32_t, std::vector<Interval>> by_thread;
  for (const Range& r : trace.ranges)
    if (trace.str(r.name).starts_with("ProfilerStep#") && r.end_ns > r.start_ns)
      by_thread[r.tid].push_back({r.start_ns, r.end_ns});
  std::vector<Interval>* most = nullptr;
  for (auto& [tid, list] : by_thread)
    if (!most || list.size() > most->size()) most = &list;
  if (!most) return {};
  std::sort(most->begin(), most->end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> steps;
  for (const Interval& s : *most)
    if (steps.empty() || s.begin >= steps.back().end) steps.push_back(s);
  return steps;
}

// A range's name without a trailing step number: "step 12", "iter#3" and
// "train_step_7" name one kind of range each.
std::string_view name_without_number(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  while (end > 0 && (name[end - 1] == ' ' || name[end - 1] == '#' || name[end - 1] == '_' || name[end - 1] == '-' ||
                     name[end - 1] == ':'))
    --end;
  return name.substr(0, end);
}

// Ranges the program named itself (NVTX ranges, torch.profiler's
// record_function, gdrt's steps under another name) that mark its
// iterations: one thread's outermost ranges of one name (a trailing number
// aside), at least min_iterations of them, which together hold most of the
// run's launch calls. The kind that holds the most launches wins.
std::vector<Interval> named_steps(const Trace& trace, const IterationOptions& options) {
  std::vector<std::uint64_t> launches;
  for (const ApiCall& a : trace.api_calls)
    if (trace.is_launch(a)) launches.push_back(a.start_ns);
  if (launches.empty()) return {};
  std::sort(launches.begin(), launches.end());
  const auto launches_in = [&](const Interval& i) {
    return static_cast<std::size_t>(std::lower_bound(launches.begin(), launches.end(), i.end) -
                                    std::lower_bound(launches.begin(), launches.end(), i.begin));
  };
  std::map<std::uint32_t, std::vector<const Range*>> by_thread;
  for (const Range& r : trace.ranges)
    if (r.end_ns > r.start_ns) by_thread[r.tid].push_back(&r);
  std::vector<Interval> best;
  std::size_t best_launches = 0;
  for (auto& [tid, ranges] : by_thread) {
    std::sort(ranges.begin(), ranges.end(), [](const Range* a, const Range* b) { return a->start_ns < b->start_ns; });
    std::map<std::string_view, std::vector<Interval>> kinds;  // outermost ranges by name
    std::uint64_t open_until = 0;
    for (const Range* r : ranges) {
      if (r->start_ns < open_until) continue;  // nested in the one before
      open_until = r->end_ns;
      kinds[name_without_number(trace.str(r->name))].push_back({r->start_ns, r->end_ns});
    }
    for (auto& [name, steps] : kinds) {
      if (name.empty() || steps.size() < options.min_iterations) continue;
      std::size_t held = 0;
      for (const Interval& i : steps) held += launches_in(i);
      if (held * 2 < launches.size() || held <= best_launches) continue;
      best = steps;
      best_launches = held;
    }
  }
  return best;
}

// A share of the iterations large enough to call a pattern theirs, and not
// one that a few iterations show by chance: three in four.
bool most_of(std::size_t with, std::size_t iterations) { return with * 4 >= iterations * 3; }

// Whether the GPU breaks off once in most iterations: its longest idle gap
// there at least twice any other of the iteration and at least
// kMinBreakNs. The host's work between steps (loading the next batch,
// logging, the loop's own Python) leaves that gap; layers launched one
// after another leave gaps of launch overhead, alike from layer to layer.
// Each iteration owns the gaps before its kernels after the first and the
// gap before the next iteration's first kernel, so that start-up's gap
// before the first iteration counts for none.
bool breaks_once_per_iteration(const std::vector<const Kernel*>& ks, const std::vector<std::size_t>& starts) {
  constexpr std::uint64_t kMinBreakNs = 10'000;
  std::vector<std::uint64_t> gap_before(ks.size(), 0);
  std::uint64_t busy_until = 0;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (i > 0 && ks[i]->start_ns > busy_until) gap_before[i] = ks[i]->start_ns - busy_until;
    busy_until = std::max(busy_until, ks[i]->end_ns);
  }
  std::size_t with_break = 0;
  for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
    std::uint64_t longest = 0, second = 0;
    for (std::size_t i = starts[k] + 1; i <= starts[k + 1]; ++i) {
      const std::uint64_t g = gap_before[i];
      if (g > longest) second = longest, longest = g;
      else second = std::max(second, g);
    }
    with_break += longest >= kMinBreakNs && longest >= 2 * second;
  }
  return most_of(with_break, starts.size() - 1);
}

// Whether most iterations move data between host and device (the batch in,
// the loss out) or wait for the device: a loop's traffic with the host, which
// the layers of one forward pass do not have. Copies are timed by the GPU,
// waits by the host, each matched with the iterations on its clock.
bool host_traffic_per_iteration(const Trace& trace, const std::vector<Interval>& on_gpu,
                                const std::vector<Interval>& on_host) {
  std::vector<bool> with(on_gpu.size(), false);
  const auto mark = [&with](const std::vector<Interval>& its, std::uint64_t t) {
    auto after = std::upper_bound(its.begin(), its.end(), t, [](std::uint64_t at, const Interval& i) { return at < i.begin; });
    if (after != its.begin() && t < std::prev(after)->end) with[static_cast<std::size_t>(after - its.begin()) - 1] = true;
  };
  for (const Memcpy& c : trace.memcpys)
    if (c.copy == CopyKind::HtoD || c.copy == CopyKind::DtoH) mark(on_gpu, c.start_ns);
  for (const Sync& s : trace.syncs)
    if (host_waits(s.kind)) mark(on_host, s.start_ns);
  return most_of(static_cast<std::size_t>(std::count(with.begin(), with.end(), true)), with.size());
}

// The intervals from each bound to the next.
std::vector<Interval> between(const std::vector<std::uint64_t>& bounds) {
  std::vector<Interval> out;
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) out.push_back({bounds[k], bounds[k + 1]});
  return out;
}

// The launch calls of the bounding kernels, when every one is known and
// they come in order: the iterations as the host issued them.
std::vector<Interval> as_launched(const Trace& trace, const std::vector<const Kernel*>& bounds) {
  std::unordered_map<std::uint64_t, const ApiCall*> launch;  // correlation -> launch call, nullptr until seen
  for (const Kernel* k : bounds)
    if (k->correlation != 0) launch.emplace(k->correlation, nullptr);
  for (const ApiCall& a : trace.api_calls)
    if (auto it = launch.find(a.correlation); it != launch.end() && it->second == nullptr && trace.is_launch(a))
      it->second = &a;
  std::vector<std::uint64_t> at;
  for (const Kernel* k : bounds) {
    const auto it = launch.find(k->correlation);
    if (it == launch.end() || it->second == nullptr) return {};
    at.push_back(it->second->start_ns);
  }
  if (!std::is_sorted(at.begin(), at.end())) return {};
  return between(at);
}

// A repeating run of kernels is no loop by itself: the layers of one forward
// pass repeat too (a transformer's blocks, back to back in one burst of GPU
// work), and so do the per-sample ops of a data loader before a run that
// aborts. It is taken for a training loop only with evidence of one: the
// GPU breaks off once an iteration (the host's work between steps), or the
// iterations copy to or from the host or wait for the device. Kernel names
// (backward, optimizer) are left out: what a kernel is called says little
// across frameworks and gdrt's own.
bool looks_like_a_loop(const Trace& trace, const std::vector<const Kernel*>& ks, const std::vector<std::size_t>& starts) {
  if (breaks_once_per_iteration(ks, starts)) return true;
  std::vector<const Kernel*> bounds;
  std::vector<std::uint64_t> at;
  for (std::size_t s : starts) bounds.push_back(ks[s]), at.push_back(ks[s]->start_ns);
  const std::vector<Interval> on_gpu = between(at);
  std::vector<Interval> on_host = as_launched(trace, bounds);
  if (on_host.empty()) on_host = on_gpu;
  return host_traffic_per_iteration(trace, on_gpu, on_host);
}

// The kernels that start each whole iteration of `ks` (one device's or one
// stream's), then the one that starts the iteration after the last; empty
// when no loop shows.
std::vector<const Kernel*> repeating_sequence(const Trace& trace, std::vector<const Kernel*> ks,
                                              const IterationOptions& options) {
  std::stable_sort(ks.begin(), ks.end(), [](const Kernel* a, const Kernel* b) { return a->start_ns < b->start_ns; });
  const std::size_t m = std::min(options.signature, ks.size() / (options.min_iterations + 1));
  if (m < 4) return {};

  // The loop need not start the trace (start-up: model set-up, autotuning)
  // nor end it: signatures taken at several places, and the evenly spaced run
  // of repetitions that spans the most kernels wins (a layer repeated inside
  // one step spans less than the steps do), the earliest place on a tie.
  std::vector<std::size_t> best;
  const auto span = [](const std::vector<std::size_t>& s) { return s.size() < 2 ? 0 : s.back() - s.front(); };
  for (int eighth = 0; eighth < 8; ++eighth) {
    const std::size_t anchor = std::min(ks.size() * static_cast<std::size_t>(eighth) / 8, ks.size() - m);
    auto starts = evenly_spaced_repetitions(ks, anchor, m, options.max_spread);
    if (starts.size() >= options.min_iterations + 1 && span(starts) > span(best) && looks_like_a_loop(trace, ks, starts))
      best = std::move(starts);
  }
  if (best.size() < options.min_iterations + 1) return {};
  std::vector<const Kernel*> out;
  for (std::size_t start : best) out.push_back(ks[start]);
  return out;
}

template <class Key>
const std::vector<const Kernel*>* busiest(const std::map<Key, std::vector<const Kernel*>>& groups) {
  const std::vector<const Kernel*>* most = nullptr;
  for (const auto& [key, list] : groups)
    if (!most || list.size() > most->size()) most = &list;
  return most;
}

// The kernels that bound the loop's iterations (see repeating_sequence).
std::vector<const Kernel*> iteration_kernels(const Trace& trace, const IterationOptions& options) {
  // The stream that ran the most kernels carries the loop: work on other
  // streams (a metrics or copy stream) interleaves with it differently from
  // step to step. Where that stream shows none, its whole device.
  std::map<std::pair<std::int32_t, std::uint64_t>, std::vector<const Kernel*>> by_stream;
  std::map<std::int32_t, std::vector<const Kernel*>> by_device;
  for (const Kernel& k : trace.kernels) {
    by_stream[{k.device, k.stream}].push_back(&k);
    by_device[k.device].push_back(&k);
  }
  const auto* stream = busiest(by_stream);
  if (!stream) return {};
  if (auto found = repeating_sequence(trace, *stream, options); !found.empty()) return found;
  const std::vector<const Kernel*>& device = by_device.at(stream->front()->device);
  if (device.size() == stream->size()) return {};
  return repeating_sequence(trace, device, options);
}

// From the start of the first GPU work (kernel, copy, memset) that the host
// launched within `host` to the end of the last; empty when it launched
// none. Work whose launch call is not in the trace counts where it ran.
Interval gpu_work_launched_in(const Trace& trace, const Interval& host) {
  std::unordered_map<std::uint64_t, std::uint64_t> called_at;  // correlation -> the call's start
  for (const ApiCall& a : trace.api_calls)
    if (a.correlation != 0) called_at.emplace(a.correlation, a.start_ns);
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max(), last = 0;
  const auto add = [&](std::uint64_t correlation, std::uint64_t start, std::uint64_t end) {
    const auto call = correlation != 0 ? called_at.find(correlation) : called_at.end();
    const std::uint64_t launched = call != called_at.end() ? call->second : start;
    if (launched < host.begin || launched >= host.end) return;
    first = std::min(first, start);
    last = std::max(last, std::max(start, end));
  };
  for (const Kernel& k : trace.kernels) add(k.correlation, k.start_ns, k.end_ns);
  for (const Memcpy& c : trace.memcpys) add(c.correlation, c.start_ns, c.end_ns);
  for (const Memset& s : trace.memsets) add(s.correlation, s.start_ns, s.end_ns);
  return first < last ? Interval{first, last} : Interval{};
}

std::vector<std::uint64_t> starts_of(const std::vector<const Kernel*>& kernels) {
  std::vector<std::uint64_t> at;
  for (const Kernel* k : kernels) at.push_back(k->start_ns);
  return at;
}

}  // namespace

std::vector<Interval> detect_iterations(const Trace& trace, const IterationOptions& options) {
  return between(starts_of(iteration_kernels(trace, options)));
}

std::uint64_t median_iteration_ns(const RunPhases& phases) {
  std::vector<std::uint64_t> lengths;
  for (const Interval& i : phases.iterations) lengths.push_back(i.length());
  if (lengths.empty()) return 0;
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(lengths.size() / 2), lengths.end());
  return lengths[lengths.size() / 2];
}

RunPhases find_phases(const Trace& trace, const IterationOptions& options) {
  // Iterations are found where every event is: what a bounded trace kept
  // of its dropped part (first occurrences, errors) is no loop.
  if (trace.bounded()) return find_phases(trace.detailed_part(), options);
  RunPhases p;
  p.begin_ns = trace.begin_ns();
  // A bounded trace's detail: what came before it was dropped, not start-up
  // (its iterations, found among the events from then on, start after it).
  if (trace.detail_of_bounded()) p.begin_ns = std::max(p.begin_ns, trace.part_detail_from_ns);
  p.end_ns = trace.end_ns();
  // Even one profiler step is the window the user profiled, as TraceLens
  // and HolisticTraceAnalysis take it: the kernels that repeat inside it are
  // the model's layers, not iterations.
  if (auto steps = profiler_steps(trace); !steps.empty()) {
    p.iterations = std::move(steps);
    p.source = "profiler steps";
    p.profiler_window = trace.source == TraceSource::Kineto;
    p.gpu_steady_window = gpu_work_launched_in(trace, p.steady());
  } else if (auto named = named_steps(trace, options); !named.empty()) {
    p.iterations = std::move(named);
    p.source = "named ranges";
    p.gpu_steady_window = gpu_work_launched_in(trace, p.steady());
  } else if (auto bounds = iteration_kernels(trace, options); !bounds.empty()) {
    p.iterations = between(starts_of(bounds));
    p.host_iterations = as_launched(trace, bounds);
    p.source = "repeating kernel sequence";
  }
  if (p.host_iterations.empty()) p.host_iterations = p.iterations;
  return p;
}

}  // namespace gpudiag
