#include "gpudiag/analysis/gpu_time.h"

#include <algorithm>
#include <map>
#include <optional>

namespace gpudiag {

bool is_communication_kernel(std::string_view name) { return name.find("nccl") != std::string_view::npos; }

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (!merged.empty() && i.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, i.end);
    else
      merged.push_back(i);
  }
  return merged;
}

std::uint64_t total_length(const std::vector<Interval>& merged) {
  std::uint64_t sum = 0;
  for (const Interval& i : merged) sum += i.length();
  return sum;
}

std::uint64_t length_within(const std::vector<Interval>& merged, const Interval& window) {
  // Merged lists are sorted by end too: skip to the first that ends after the window begins.
  auto it = std::upper_bound(merged.begin(), merged.end(), window.begin,
                             [](std::uint64_t t, const Interval& i) { return t < i.end; });
  std::uint64_t total = 0;
  for (; it != merged.end() && it->begin < window.end; ++it)
    total += std::min(it->end, window.end) - std::max(it->begin, window.begin);
  return total;
}

std::vector<Interval> subtract_intervals(const std::vector<Interval>& from, const std::vector<Interval>& remove) {
  std::vector<Interval> out;
  std::size_t r = 0;
  for (const Interval& f : from) {
    std::uint64_t cur = f.begin;
    while (r < remove.size() && remove[r].end <= f.begin) ++r;
    for (std::size_t k = r; k < remove.size() && remove[k].begin < f.end; ++k) {
      if (remove[k].begin > cur) out.push_back({cur, std::min(f.end, remove[k].begin)});
      cur = std::max(cur, remove[k].end);
      if (cur >= f.end) break;
    }
    if (cur < f.end) out.push_back({cur, f.end});
  }
  return out;
}

namespace {

struct DeviceIntervals {
  std::vector<Interval> all, computation, communication, memcpy, kernels, memsets;
  std::uint64_t kernels_n = 0, memcpys_n = 0, memsets_n = 0;
};

Interval span(std::uint64_t b, std::uint64_t e) { return {b, std::max(b, e)}; }

std::vector<GpuTime> breakdown(const Trace& trace, const std::optional<Interval>& window) {
  std::map<std::int32_t, Interval> active;  // with a window: each device's first and last GPU activity
  // The interval a piece of GPU work counts for: cut to the window, none
  // when it lies outside.
  auto counted = [&](std::int32_t device, std::uint64_t b, std::uint64_t e) -> std::optional<Interval> {
    const Interval i = span(b, e);
    if (!window) return i;
    if (auto [it, fresh] = active.try_emplace(device, i); !fresh)
      it->second = {std::min(it->second.begin, i.begin), std::max(it->second.end, i.end)};
    if (i.end < window->begin || i.begin >= window->end || (i.end == window->begin && i.length() > 0))
      return std::nullopt;
    return Interval{std::max(i.begin, window->begin), std::min(i.end, window->end)};
  };
  std::map<std::int32_t, DeviceIntervals> by_device;
  for (const Kernel& k : trace.kernels) {
    const std::optional<Interval> i = counted(k.device, k.start_ns, k.end_ns);
    if (!i) continue;
    DeviceIntervals& d = by_device[k.device];
    d.all.push_back(*i);
    d.kernels.push_back(*i);
    ++d.kernels_n;
    if (is_communication_kernel(trace.str(k.name)))
      d.communication.push_back(*i);
    else
      d.computation.push_back(*i);
  }
  for (const Memset& m : trace.memsets) {
    const std::optional<Interval> i = counted(m.device, m.start_ns, m.end_ns);
    if (!i) continue;
    DeviceIntervals& d = by_device[m.device];
    d.all.push_back(*i);
    d.memsets.push_back(*i);
    d.computation.push_back(*i);
    ++d.memsets_n;
  }
  for (const Memcpy& c : trace.memcpys) {
    const std::optional<Interval> i = counted(c.device, c.start_ns, c.end_ns);
    if (!i) continue;
    DeviceIntervals& d = by_device[c.device];
    d.all.push_back(*i);
    d.memcpy.push_back(*i);
    ++d.memcpys_n;
  }
  std::vector<GpuTime> out;
  for (auto& [device, d] : by_device) {
    GpuTime g;
    g.device = device;
    g.busy = merge_intervals(std::move(d.all));
    const auto comp = merge_intervals(std::move(d.computation));
    const auto comm = merge_intervals(std::move(d.communication));
    const auto copy = merge_intervals(std::move(d.memcpy));
    g.begin_ns = window ? window->begin : g.busy.front().begin;
    g.end_ns = window ? window->end : g.busy.back().end;
    g.total_ns = g.end_ns - g.begin_ns;
    g.busy_ns = total_length(g.busy);
    g.idle_ns = g.total_ns - g.busy_ns;
    g.computation_ns = total_length(comp);
    g.communication_ns = total_length(comm);
    g.memcpy_ns = total_length(copy);
    g.kernel_ns = total_length(merge_intervals(std::move(d.kernels)));
    g.memset_ns = total_length(merge_intervals(std::move(d.memsets)));
    g.exposed_comm_ns = total_length(subtract_intervals(comm, comp));
    g.exposed_memcpy_ns = total_length(subtract_intervals(subtract_intervals(copy, comp), comm));
    g.kernels = d.kernels_n;
    g.memcpys = d.memcpys_n;
    g.memsets = d.memsets_n;
    if (window) {
      const Interval& work = active.at(device);
      g.windowed = true;
      g.before_window_ns = work.begin < window->begin ? window->begin - work.begin : 0;
      g.after_window_ns = work.end > window->end ? work.end - window->end : 0;
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

std::vector<GpuTime> gpu_time_breakdown(const Trace& trace) { return breakdown(trace, std::nullopt); }

std::vector<GpuTime> gpu_time_breakdown(const Trace& trace, const Interval& window) { return breakdown(trace, window); }

}  // namespace gpudiag
