// GPU time breakdown per device, computed as TraceLens's GPUEventAnalyser
// does: kernels, memsets and copies become intervals; each category is the
// union of its intervals (overlap across streams counted once); the total is
// the span from the start of the first to the end of the last GPU activity;
// idle = total - busy. Computation is kernels and memsets except NCCL
// kernels, which are communication; exposed communication is communication
// not overlapped by computation, exposed memcpy is memcpy overlapped by
// neither.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "gpudiag/trace.h"

namespace gpudiag {

struct Interval {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t length() const { return end - begin; }
  bool operator==(const Interval&) const = default;
};

// Sorts and merges touching or overlapping intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
// Total length of a merged list.
std::uint64_t total_length(const std::vector<Interval>& merged);
// Total length of the parts of a merged list that lie inside `window`.
std::uint64_t length_within(const std::vector<Interval>& merged, const Interval& window);
// Parts of `from` not covered by `remove` (both merged).
std::vector<Interval> subtract_intervals(const std::vector<Interval>& from, const std::vector<Interval>& remove);

struct GpuTime {
  std::int32_t device = 0;
  std::uint64_t begin_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t idle_ns = 0;
  std::uint64_t computation_ns = 0;  // kernels + memsets, without NCCL
  std::uint64_t kernel_ns = 0;       // kernels alone (NCCL included)
  std::uint64_t memset_ns = 0;
  std::uint64_t memcpy_ns = 0;
  std::uint64_t communication_ns = 0;
  std::uint64_t exposed_comm_ns = 0;
  std::uint64_t exposed_memcpy_ns = 0;
  std::uint64_t kernels = 0, memcpys = 0, memsets = 0;
  std::vector<Interval> busy;  // merged busy intervals (gaps between them are idle)
  // With a window: how long the device's GPU activity went on before it
  // (start-up) and after it (shutdown), which the breakdown leaves out.
  bool windowed = false;
  std::uint64_t before_window_ns = 0, after_window_ns = 0;
};

// A collective's kernel: communication, not computation. TraceLens's rule,
// a name that mentions nccl (RCCL's kernels keep NCCL's names).
bool is_communication_kernel(std::string_view name);

// One entry per device that ran GPU work, ordered by device id.
std::vector<GpuTime> gpu_time_breakdown(const Trace& trace);
// The same within `window` (a training loop's steady state): every interval
// is cut to it, and the total is the window itself, so that time before the
// loop (module loading, autotuning) is not counted as idle. One entry per
// device that ran GPU work within the window.
std::vector<GpuTime> gpu_time_breakdown(const Trace& trace, const Interval& window);

}  // namespace gpudiag
