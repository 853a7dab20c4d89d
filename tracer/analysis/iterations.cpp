#include "gpudiag/analysis/iterations.h"

#include <algorithm>
#include <map>

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

}  // namespace

std::vector<Interval> detect_iterations(const Trace& trace, const IterationOptions& options) {
  // The device that ran the most kernels carries the loop.
  std::map<std::int32_t, std::vector<const Kernel*>> by_device;
  for (const Kernel& k : trace.kernels) by_device[k.device].push_back(&k);
  const std::vector<const Kernel*>* kernels = nullptr;
  for (const auto& [d, list] : by_device)
    if (!kernels || list.size() > kernels->size()) kernels = &list;
  if (!kernels) return {};
  std::vector<const Kernel*> ks = *kernels;
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
    if (starts.size() >= options.min_iterations + 1 && span(starts) > span(best)) best = std::move(starts);
  }
  if (best.size() < options.min_iterations + 1) return {};
  std::vector<Interval> out;
  for (std::size_t k = 0; k + 1 < best.size(); ++k) out.push_back({ks[best[k]]->start_ns, ks[best[k + 1]]->start_ns});
  return out;
}

std::uint64_t median_iteration_ns(const RunPhases& phases) {
  std::vector<std::uint64_t> lengths;
  for (const Interval& i : phases.iterations) lengths.push_back(i.length());
  if (lengths.empty()) return 0;
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(lengths.size() / 2), lengths.end());
  return lengths[lengths.size() / 2];
}

RunPhases find_phases(const Trace& trace, const IterationOptions& options) {
  RunPhases p;
  p.begin_ns = trace.begin_ns();
  p.end_ns = trace.end_ns();
  if (auto steps = profiler_steps(trace); steps.size() >= 2) {
    p.iterations = std::move(steps);
    p.source = "profiler steps";
  } else if (auto repeated = detect_iterations(trace, options); !repeated.empty()) {
    p.iterations = std::move(repeated);
    p.source = "repeating kernel sequence";
  }
  return p;
}

}  // namespace gpudiag
