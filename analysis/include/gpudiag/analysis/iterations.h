// Training iterations and the phases of a run. The profiler's own steps
// (Kineto's ProfilerStep#N, gdrt::TrainingStep) mark iterations where a
// trace has them, even a single one (a profile of one inference step: that
// step is the window); else ranges the program named itself (NVTX ranges
// such as "step 12", repeating on one thread and holding most launches);
// else they are recovered from the trace itself: a training loop launches
// the same sequence of kernels every step, so where a run of kernels repeats
// evenly, and the run shows a loop's traffic with the host or its break
// between steps, marks the iterations (the layers of one forward pass repeat
// too, and are no loop). Before the first iteration is start-up (module
// loading, cuDNN autotuning, moving the model), after the last shutdown;
// per-iteration rules are judged on the steady state between them.
#pragma once

#include <string_view>
#include <vector>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/trace.h"

namespace gpudiag {

struct IterationOptions {
  std::size_t signature = 16;      // kernels that must repeat, in order, to mark an iteration
  std::size_t min_iterations = 3;  // fewer: no loop is claimed
  double max_spread = 0.10;        // kernels per iteration may differ by at most this share
};

// Whole iterations, in time order, each from the start of its first kernel
// to the start of the next iteration's; empty when no loop shows (the
// trailing, possibly partial, iteration is left out).
std::vector<Interval> detect_iterations(const Trace& trace, const IterationOptions& options = {});

struct RunPhases {
  std::vector<Interval> iterations;  // empty: no loop shows
  // The same iterations as the host lived them, where it allocates and
  // waits. Found from the GPU's repeating kernels, `iterations` are when the
  // GPU ran them, and the host may be far ahead (a loop of 200 steps all
  // queued before the GPU ran the tenth): these run from the launch of each
  // iteration's first kernel, where every one is known. Otherwise, and for
  // the host's own ranges (profiler steps, named ranges), `iterations`.
  std::vector<Interval> host_iterations;
  std::string_view source;  // "profiler steps", "named ranges", "repeating kernel sequence", or ""
  std::uint64_t begin_ns = 0, end_ns = 0;  // of the whole trace
  // The trace is a profiler's window onto a running program (Kineto's
  // steps): what precedes its first step is the profiler starting, no
  // start-up of the program.
  bool profiler_window = false;
  // The steady state as the GPU ran it. The host's own ranges (profiler
  // steps, named ranges) are on its clock, and the GPU runs what they
  // launched later: from the start of the first GPU work launched in them to
  // the end of the last, where any is known. The repeating kernel sequence
  // is the GPU's already.
  Interval gpu_steady_window{};

  bool has_loop() const { return !iterations.empty(); }
  // From the start of the first iteration to the end of the last; the whole
  // trace when no loop shows (its last instant included).
  Interval steady() const { return span_of(iterations); }
  Interval host_steady() const { return span_of(host_iterations); }
  Interval gpu_steady() const { return gpu_steady_window.length() ? gpu_steady_window : steady(); }
  std::uint64_t startup_ns() const {
    return has_loop() && !profiler_window ? iterations.front().begin - begin_ns : 0;
  }
  bool in_steady_state(std::uint64_t t) const { return t >= steady().begin && t < steady().end; }

 private:
  Interval span_of(const std::vector<Interval>& its) const {
    return its.empty() ? Interval{begin_ns, end_ns + 1} : Interval{its.front().begin, its.back().end};
  }
};

RunPhases find_phases(const Trace& trace, const IterationOptions& options = {});

// The median length of the iterations, 0 without a loop.
std::uint64_t median_iteration_ns(const RunPhases& phases);

}  // namespace gpudiag
