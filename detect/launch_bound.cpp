// GD011 launch-bound at run time: the GPU waits on the host. Signs: long idle
// gaps between GPU work, kernels shorter than the API call that launched
// them, and copies taking more GPU time than computation. Judged on the
// training loop when the trace shows one: start-up (module loading,
// autotuning) is no idleness of the loop. Kernels a CPU device ran (device
// -1, the host) have no GPU to keep busy. What it costs decides whether it
// is said at all: the GPU idle at least --idle-share of the window, or busy
// copying that much more than computing. A GPU busy most of the loop, with
// long kernels or with communication (NCCL kernels, which are busy time
// and not the host's launches), is not held up by the short kernels around
// them.
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
    // The device's busy time inside the window judged: the loop as the GPU ran it, or all of its activity.
    const Interval window = phases.has_loop() ? phases.gpu_steady() : Interval{g.begin_ns, g.end_ns};
    std::vector<Interval> busy;
    for (const Interval& b : g.busy)
      if (const std::uint64_t lo = std::max(b.begin, window.begin), hi = std::min(b.end, window.end); lo < hi)
        busy.push_back({lo, hi});
    if (busy.empty() || window.length() == 0) continue;
    // Idle time while the host was inside a CUDA call that launches nothing
    // (a sync, a blocking copy) is not the launches' fault: the GPU waited
    // with the host for something else, another rank's collective or data.
    std::vector<Interval> occupied = busy;
    for (const ApiCall& a : t.api_calls)
      if (!t.is_launch(a))
        if (const std::uint64_t lo = std::max(a.start_ns, window.begin), hi = std::min(a.end_ns, window.end); lo < hi)
          occupied.push_back({lo, hi});
    occupied = merge_intervals(std::move(occupied));
    // Idle gaps, between what kept the GPU busy or the host waiting.
    std::uint64_t gaps = 0, gap_ns = 0, longest = 0;
    for (std::size_t i = 1; i < occupied.size(); ++i) {
      const std::uint64_t gap = occupied[i].begin - occupied[i - 1].end;
      if (gap <= o.idle_gap_ns) continue;
      ++gaps;
      gap_ns += gap;
      longest = std::max(longest, gap);
    }
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
      if (is_communication_kernel(t.str(k.name))) continue;  // a collective's time is the network's, not a launch's
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
    const double idle_share = 1.0 - busy_share;
    const double launch_idle_share =
        1.0 - static_cast<double>(total_length(occupied)) / static_cast<double>(window.length());
    const double copy_share = std::min(1.0, static_cast<double>(memcpy_ns) / static_cast<double>(window.length()));
    const double short_share = kernels ? static_cast<double>(short_kernels) / static_cast<double>(kernels) : 0.0;
    const double short_time_share = kernel_ns ? static_cast<double>(short_ns) / static_cast<double>(kernel_ns) : 0.0;
    const double outrun_share = with_launch ? static_cast<double>(outrun) / static_cast<double>(with_launch) : 0.0;
    const bool copies_dominate = memcpy_ns > computation_ns && copy_share >= o.idle_share;
    // Below the threshold the GPU works, or waits with the host, most of the
    // time: nothing to say.
    const bool launch_paced = launch_idle_share >= o.idle_share;
    if (!launch_paced && !copies_dominate) continue;
    // Gaps, short kernels and slow launches are the launches' only where they
    // set the pace: a GPU busy copying is not waiting for them.
    std::vector<std::string> reasons;
    if (launch_paced && gaps > 0)
      reasons.push_back(fmt::format("{} idle gap{} longer than {} ({} in all, the longest {})", gaps,
                                    gaps == 1 ? "" : "s", format_duration(o.idle_gap_ns), format_duration(gap_ns),
                                    format_duration(longest)));
    const bool many_short = launch_paced && kernels >= o.min_kernels && short_share >= o.short_kernel_share;
    if (many_short)
      reasons.push_back(fmt::format("{:.0f}% of {} kernels ran shorter than {} ({:.0f}% of the kernel time)",
                                    short_share * 100.0, kernels, format_duration(o.short_kernel_ns),
                                    short_time_share * 100.0));
    if (launch_paced && with_launch >= o.min_kernels && outrun_share >= o.short_kernel_share)
      reasons.push_back(fmt::format("{:.0f}% of kernels took less GPU time than the CPU spent launching them",
                                    outrun_share * 100.0));
    if (copies_dominate)
      reasons.push_back(fmt::format("copies took {} of GPU time against {} of computation",
                                    format_duration(memcpy_ns), format_duration(computation_ns)));
    if (reasons.empty()) continue;
    std::string msg = fmt::format(
        "{} was idle {:.1f}% of {}{}{}, copying {:.1f}% (a note from {:.0f}% idle on, --idle-share): ",
        t.device_label(g.device), idle_share * 100.0,
        !phases.has_loop()        ? ""
        : phases.profiler_window ? "the profiled steps' "
                                 : "the training loop's ",
        format_duration(window.length()),
        launch_idle_share < idle_share - 0.0005
            ? fmt::format(" ({:.1f}% while the host launched rather than waited in a CUDA call)", launch_idle_share * 100.0)
            : std::string(),
        copy_share * 100.0, o.idle_share * 100.0);
    for (std::size_t i = 0; i < reasons.size(); ++i) msg += (i ? "; " : "") + reasons[i];
    if (many_short)
      msg += ". The GPU is launch-bound: it waits for the host to launch one small kernel after another";
    msg += ". Launch fewer, larger kernels: capture the step in a CUDA graph (torch.cuda.graphs, cudaStreamBeginCapture), "
           "compile it to fuse small ops (torch.compile), use larger batches; keep data on the device between steps "
           "and overlap copies with compute";
    if (phases.startup_ns() > 0)
      msg += fmt::format(" (the {} before the first iteration are not counted)",
                         format_duration(phases.startup_ns()));
    out.push_back(make_finding(ctx, std::move(msg)));
  }
}

}  // namespace gpudiag
