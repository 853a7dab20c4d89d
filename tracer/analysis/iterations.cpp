#include "gpudiag/analysis/iterations.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace gpudiag {

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

  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i + m <= ks.size();) {
    bool match = true;
    for (std::size_t j = 0; j < m && match; ++j) match = ks[i + j]->name == ks[j]->name;
    if (match) {
      starts.push_back(i);
      i += m;
    } else {
      ++i;
    }
  }
  if (starts.size() < options.min_iterations + 1) return {};
  std::size_t lo = SIZE_MAX, hi = 0;
  for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
    lo = std::min(lo, starts[k + 1] - starts[k]);
    hi = std::max(hi, starts[k + 1] - starts[k]);
  }
  if (static_cast<double>(hi - lo) > options.max_spread * static_cast<double>(hi)) return {};
  std::vector<Interval> out;
  for (std::size_t k = 0; k + 1 < starts.size(); ++k)
    out.push_back({ks[starts[k]]->start_ns, ks[starts[k + 1]]->start_ns});
  return out;
}

}  // namespace gpudiag
