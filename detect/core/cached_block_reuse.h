// GD004 for PyTorch's caching allocator, from its allocator history beside
// the trace (Trace::cached_blocks).
#pragma once

#include <vector>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

// A tensor dropped while a launch on another stream, that nothing ordered
// before its block was free again, still used the block.
void report_cached_block_reuse(const DetectContext& ctx, const Launches& launches, std::vector<Finding>& out);

}  // namespace gpudiag
