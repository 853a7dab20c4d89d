// Training iterations recovered from the trace itself: a training loop
// launches the same sequence of kernels every step, so the places where the
// first kernels of the trace repeat mark the iterations.
#pragma once

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

}  // namespace gpudiag
