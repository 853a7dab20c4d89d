#include "gpudiag/analysis/temporal_breakdown.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <unordered_map>

namespace gpudiag {

std::string_view to_string(HtaKernelType type) {
  switch (type) {
    case HtaKernelType::Communication: return "communication";
    case HtaKernelType::Memory: return "memory";
    case HtaKernelType::Computation: return "computation";
    case HtaKernelType::Other: return "other";
  }
  return "other";
}

namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

bool contains_any(std::string_view name, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return name.find(p) != std::string_view::npos; });
}

// The names HTA's ComputeKernelGroupingPattern excludes beyond communication
// and memory: runtime calls and other accelerators' bookkeeping, which are
// no computation of the model's.
bool is_hta_other(std::string_view name) {
  if (contains_any(name, {"Memcpy", "Memset", "dma", "Sync"})) return true;
  if (starts_with_any(name, {"Stream Wait Event", "runFunction", "job_exe", "packet", "pe_exe", "cpum_exe_subgraph",
                             "collective_subgraph_execution"}))
    return true;
  return name.starts_with("cuda") && name.find("LaunchKernel", 4) != std::string_view::npos;
}

// Whether HTA counts the GPU work of a launch that started at host time t:
// always, unless the trace has two or more profiler steps; then only what
// was launched before the last one began (or, keeping it, until it ended).
class LaunchCutoff {
 public:
  LaunchCutoff(const Trace& trace, bool include_last_step) : include_last_(include_last_step) {
    std::set<std::string_view> steps;
    for (const Range& r : trace.ranges) {
      const std::string_view name = trace.str(r.name);
      if (!name.starts_with("ProfilerStep#")) continue;
      steps.insert(name);
      last_start_ = std::max(last_start_, r.start_ns);
      last_end_ = std::max(last_end_, r.end_ns);
    }
    active_ = steps.size() >= 2;
    if (!active_) return;
    // A correlation may name several host events (a runtime call and the
    // driver call beneath it): the work counts when any of them does.
    for (const ApiCall& a : trace.api_calls)
      if (a.correlation != 0) {
        auto [it, fresh] = first_launch_.try_emplace(a.correlation, a.start_ns);
        if (!fresh) it->second = std::min(it->second, a.start_ns);
      }
  }

  bool counts(std::uint64_t correlation, std::uint64_t start_ns) const {
    if (!active_) return true;
    if (correlation == 0) return before_cutoff(start_ns);
    const auto it = first_launch_.find(correlation);
    return it != first_launch_.end() && before_cutoff(it->second);
  }

 private:
  bool before_cutoff(std::uint64_t t) const { return include_last_ ? t <= last_end_ : t < last_start_; }

  bool include_last_;
  bool active_ = false;
  std::uint64_t last_start_ = 0, last_end_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> first_launch_;
};

struct DeviceWork {
  std::vector<Interval> all, compute, communication, memory;
  std::uint64_t events = 0;
};

}  // namespace

HtaKernelType hta_kernel_type(std::string_view name) {
  if (starts_with_any(name, {"nccl", "hip", "hccl"}) || name.find("ncclKernel") != std::string_view::npos)
    return HtaKernelType::Communication;
  if (starts_with_any(name, {"Memcpy", "Memset", "hipMemcpy", "hipMemset", "dma"})) return HtaKernelType::Memory;
  return is_hta_other(name) ? HtaKernelType::Other : HtaKernelType::Computation;
}

std::vector<TemporalBreakdown> temporal_breakdown(const Trace& trace, const TemporalBreakdownOptions& options) {
  const LaunchCutoff cutoff(trace, options.include_last_profiler_step);
  std::map<std::int32_t, DeviceWork> by_device;
  auto add = [&](std::int32_t device, std::uint64_t begin, std::uint64_t end, std::uint64_t correlation, HtaKernelType type) {
    if (!cutoff.counts(correlation, begin)) return;
    const Interval i{begin, std::max(begin, end)};
    DeviceWork& d = by_device[device];
    d.all.push_back(i);
    ++d.events;
    if (type == HtaKernelType::Computation) d.compute.push_back(i);
    else if (type == HtaKernelType::Communication) d.communication.push_back(i);
    else if (type == HtaKernelType::Memory) d.memory.push_back(i);
  };
  for (const Kernel& k : trace.kernels) add(k.device, k.start_ns, k.end_ns, k.correlation, hta_kernel_type(trace.str(k.name)));
  for (const Memcpy& c : trace.memcpys) add(c.device, c.start_ns, c.end_ns, c.correlation, HtaKernelType::Memory);
  for (const Memset& m : trace.memsets) add(m.device, m.start_ns, m.end_ns, m.correlation, HtaKernelType::Memory);

  std::vector<TemporalBreakdown> out;
  for (auto& [device, d] : by_device) {
    const std::vector<Interval> busy = merge_intervals(std::move(d.all));
    const std::vector<Interval> compute = merge_intervals(std::move(d.compute));
    const std::vector<Interval> communication = merge_intervals(std::move(d.communication));
    TemporalBreakdown b;
    b.device = device;
    b.window = {busy.front().begin, busy.back().end};
    const std::uint64_t busy_ns = total_length(busy);
    b.idle_ns = b.window.length() - busy_ns;
    b.compute_ns = total_length(compute);
    b.non_compute_ns = busy_ns - b.compute_ns;
    b.communication_ns = total_length(communication);
    b.memory_ns = total_length(merge_intervals(std::move(d.memory)));
    b.exposed_comm_ns = total_length(subtract_intervals(communication, compute));
    b.events = d.events;
    out.push_back(b);
  }
  return out;
}

}  // namespace gpudiag
