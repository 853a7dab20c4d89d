// GPU time per device as Holistic Trace Analysis (HTA,
// facebookresearch/HolisticTraceAnalysis) counts it in its temporal
// breakdown (TraceAnalysis.get_temporal_breakdown) and its
// computation/communication overlap (get_comm_comp_overlap), as its source
// at f4d0062c has them; HTA 0.5.0, the release on PyPI, counts the same on
// NVIDIA traces (it lacks only the names of other vendors' collectives).
// What it reproduces:
// - The GPU work: kernels, memcpys and memsets (HTA's events with a
//   stream). When the trace has two or more profiler steps (distinct
//   ProfilerStep#N), HTA leaves the last one out: it keeps the GPU work
//   whose launch (a host call of the same correlation) starts before the
//   last step does, wherever that work runs; GPU work without a correlation
//   is kept when it starts before then itself.
//   include_last_profiler_step, HTA's option of that name, keeps work
//   launched up to the end of the last step instead.
// - The window: from the start of the first of that work to the end of its
//   last, per device (HTA: per rank, one trace file each).
// - Each piece's kind (hta_kernel_type): HTA's get_kernel_type, by name;
//   memcpys and memsets are memory.
// - Overlap across streams counts once: idle is the window less the union
//   of all the work; compute is the union of computation; non-compute is
//   the rest of the busy time (communication, memory and other work while
//   no computation runs); communication and memory are their own unions.
// - Exposed communication: communication while no computation runs, HTA's
//   communication time times (1 - its overlap ratio).
// Not reproduced: HTA rounds timestamps with nanosecond decimals to whole
// microseconds (start up, end down); it counts the host's synchronisation
// records (Kineto's cuda_sync events, recorded only on request) that name a
// stream as GPU work, which this leaves out; and where a trace has the GPU's
// copies of the step annotations (gpu_user_annotation), which the Kineto
// import does not read, HTA's last step starts at the later of the two.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/trace.h"

namespace gpudiag {

enum class HtaKernelType : std::uint8_t { Communication, Memory, Computation, Other };
std::string_view to_string(HtaKernelType type);

// HTA's get_kernel_type (hta/common/types.py), first match wins:
// communication: a name that starts with "nccl", "hccl" or "hip", or holds
//   "ncclKernel";
// memory: one that starts with "Memcpy", "Memset", "hipMemcpy", "hipMemset"
//   or "dma";
// other: one that holds "Memcpy", "Memset", "dma" or "Sync" anywhere, or
//   starts with "Stream Wait Event", "runFunction", "job_exe", "packet",
//   "pe_exe", "cpum_exe_subgraph", "collective_subgraph_execution", or
//   with "cuda" and holds "LaunchKernel" after it (runtime names, not work);
// computation: every other name.
HtaKernelType hta_kernel_type(std::string_view name);

struct TemporalBreakdownOptions {
  bool include_last_profiler_step = false;  // HTA's default: drop it
};

struct TemporalBreakdown {
  std::int32_t device = 0;
  Interval window;  // first start to last end of the GPU work counted
  std::uint64_t idle_ns = 0;
  std::uint64_t compute_ns = 0;
  std::uint64_t non_compute_ns = 0;  // window = idle + compute + non-compute
  std::uint64_t communication_ns = 0;
  std::uint64_t memory_ns = 0;  // memcpys and memsets
  std::uint64_t exposed_comm_ns = 0;
  std::uint64_t events = 0;  // the pieces of GPU work counted

  // `ns` as a share of the window (0..1); 0 for an empty window.
  double share(std::uint64_t ns) const {
    return window.length() == 0 ? 0.0 : static_cast<double>(ns) / static_cast<double>(window.length());
  }
};

// One entry per device with GPU work counted, ordered by device id; none
// for a trace without.
std::vector<TemporalBreakdown> temporal_breakdown(const Trace& trace, const TemporalBreakdownOptions& options = {});

}  // namespace gpudiag
