// Runs every detector over a Trace built in a test.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "gpudiag/detect/detect.h"

namespace gpudiag::testing {

inline std::vector<Finding> detect(const Trace& t, const DetectOptions& options = {}) {
  const MemoryTimeline memory = build_memory_timeline(t);
  const auto time = gpu_time_breakdown(t);
  const RunPhases phases = find_phases(t);
  return run_detectors({t, memory, time, options, phases});
}

inline std::vector<Finding> only(const std::vector<Finding>& all, const std::string& rule) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](const Finding& f) { return f.rule_id == rule; });
  return out;
}

}  // namespace gpudiag::testing
