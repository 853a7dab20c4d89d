// GD011 launch-bound at run time: the GPU waits on the host. Signs: long idle
// gaps between GPU work, kernels shorter than the API call that launched
// them, and copies taking more GPU time than computation. Judged on the
// training loop when the trace shows one: start-up (module loading,
// autotuning) is no idleness of the loop. Kernels a CPU device ran (device
// -1, the host) have no GPU to keep busy. Short kernels, or kernels shorter
// than their launch, make the finding only where they set the pace: the GPU
// was idle most of the window, or most of its kernel time went to short
// kernels. A GPU busy most of the loop with long kernels (convolutions) is
// not held up by the many short element-wise ones around them.
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_launch_bound(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const DetectOptions& o = ctx.options;
  std::unordered_map<std::uint64_t, std::uint64_t> launch_ns;  // correlation -> launch call duration
  for (const ApiCall& a : t.api_calls)
    if (a.correlation != 0 && t.str(a.name).find("Launch") != std::string_view::npos)
      launch_ns.emplace(a.correlation, a.end_ns - a.start_ns);

  const RunPhases& phases = ctx.phases;
  for (const GpuTime& g : ctx.gpu_time) {
    if (g.device == kHostDevice) continue;  // work a CPU device did: no GPU to wait
    // The device's busy time inside the window judged: the loop, or all of its activity.
    const Interval window = phases.has_loop() ? phases.steady() : Interval{g.begin_ns, g.end_ns};
    std::vector<Interval> busy;
    for (const Interval& b : g.busy)
      if (const std::uint64_t lo = std::max(b.begin, window.begin), hi = std::min(b.end, window.end); lo < hi)
        busy.push_back({lo, hi});
    if (busy.empty() || window.length() == 0) continue;
    std::vector<std::string> reasons;
    // Idle gaps between merged busy intervals.
    std::uint64_t gaps = 0, gap_ns = 0, longest = 0;
    for (std::size_t i = 1; i < busy.size(); ++i) {
      const std::uint64_t gap = busy[i].begin - busy[i - 1].end;
      if (gap <= o.idle_gap_ns) continue;
      ++gaps;
      gap_ns += gap;
      longest = std::max(longest, gap);
    }
    if (gaps > 0)
      reasons.push_back(fmt::format("{} idle gap{} longer than {} ({} in all, the longest {})", gaps,
                                    gaps == 1 ? "" : "s", format_duration(o.idle_gap_ns), format_duration(gap_ns),
                                    format_duration(longest)));
    // Short kernels, and kernels that ran shorter than their own launch.
    std::uint64_t kernels = 0, short_kernels = 0, with_launch = 0, outrun = 0;
    std::uint64_t computation_ns = 0, memcpy_ns = 0;  // GPU time of the window's work
    std::uint64_t kernel_ns = 0, short_ns = 0;
    const auto in_window = [&](std::int32_t device, std::uint64_t start) {
      return device == g.device && start >= window.begin && start < window.end;
    };
    for (const Memset& s : t.memsets)
      if (in_window(s.device, s.start_ns)) computation_ns += s.end_ns - s.start_ns;
    for (const Memcpy& c : t.memcpys)
      if (in_window(c.device, c.start_ns)) memcpy_ns += c.end_ns - c.start_ns;
    for (const Kernel& k : t.kernels) {
      if (!in_window(k.device, k.start_ns)) continue;
      ++kernels;
      const std::uint64_t d = k.end_ns - k.start_ns;
      computation_ns += d;
      kernel_ns += d;
      short_kernels += d < o.short_kernel_ns;
      if (d < o.short_kernel_ns) short_ns += d;
      if (auto it = launch_ns.find(k.correlation); k.correlation != 0 && it != launch_ns.end()) {
        ++with_launch;
        outrun += d < it->second;
      }
    }
    const double busy_share =
        static_cast<double>(total_length(busy)) / static_cast<double>(window.length());
    const double short_share = kernels ? static_cast<double>(short_kernels) / static_cast<double>(kernels) : 0.0;
    const double short_time_share = kernel_ns ? static_cast<double>(short_ns) / static_cast<double>(kernel_ns) : 0.0;
    const double outrun_share = with_launch ? static_cast<double>(outrun) / static_cast<double>(with_launch) : 0.0;
    const bool launch_paced = busy_share < 0.5 || short_time_share >= 0.25;
    const bool many_short = launch_paced && kernels >= o.min_kernels && short_share >= o.short_kernel_share;
    if (many_short)
      reasons.push_back(fmt::format("{:.0f}% of {} kernels ran shorter than {} ({:.0f}% of the kernel time)",
                                    short_share * 100.0, kernels, format_duration(o.short_kernel_ns),
                                    short_time_share * 100.0));
    if (launch_paced && with_launch >= o.min_kernels && outrun_share >= o.short_kernel_share)
      reasons.push_back(fmt::format("{:.0f}% of kernels took less GPU time than the CPU spent launching them",
                                    outrun_share * 100.0));
    const bool copies_dominate = memcpy_ns > computation_ns && memcpy_ns > 0;
    if (copies_dominate)
      reasons.push_back(fmt::format("copies took {} of GPU time against {} of computation",
                                    format_duration(memcpy_ns), format_duration(computation_ns)));
    if (reasons.empty()) continue;
    std::string msg = fmt::format("{} was busy only {:.1f}% of {}{}: ", t.device_label(g.device), busy_share * 100.0,
                                  phases.has_loop() ? "the training loop's " : "", format_duration(window.length()));
    for (std::size_t i = 0; i < reasons.size(); ++i) msg += (i ? "; " : "") + reasons[i];
    if (busy_share < 0.5 && many_short)
      msg += ". The GPU is launch-bound: it waits for the host to launch one small kernel after another";
    msg += ". Launch fewer, larger kernels: capture the step in a CUDA graph (torch.cuda.graphs, cudaStreamBeginCapture), "
           "compile it to fuse small ops (torch.compile), use larger batches; keep data on the device between steps "
           "and overlap copies with compute";
    if (phases.startup_ns() > 0)
      msg += fmt::format(" (the {} before the first iteration are not counted)",
                         format_duration(phases.startup_ns()));
    out.push_back(make_finding("GD011", std::move(msg)));
  }
}

}  // namespace gpudiag
