// A trace file loaded and analysed as every command does it: symbolised
// while the binaries are still here, and, for a .gdtrace whose events
// would not fit in the memory the report may take, analysed in passes
// (gpudiag/gdtrace_passes.h) so that a trace of any length reports.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "gpudiag/gdtrace_passes.h"
#include "gpudiag/report/report.h"

namespace gpudiag {

struct AnalysedTrace {
  Trace trace;  // analysed in passes: the last pass
  Report report;
};

struct LoadOptions {
  DetectOptions detect;
  // The memory the report may take; 0: half of this machine's.
  std::uint64_t memory_bytes = 0;
  // Called at each stage of a long analysis (loading, each pass).
  std::function<void(std::string_view)> progress;
};

// Throws TraceError on bad input, as load_trace does.
AnalysedTrace load_and_analyze(const std::string& path, const LoadOptions& options = {});

// Every pass analysed as a bounded trace's detail (analyze), and the
// findings of all of them, each once; the report's memory timeline and GPU
// time are the last pass's, which `last` holds.
Report analyze_in_passes(GdtracePasses& passes, Trace& last, const DetectOptions& options = {},
                         const std::function<void(std::string_view)>& progress = {});

// Memory a report takes per event of a trace analysed whole or in one
// pass, measured by bench/report (peak resident bytes per event).
inline constexpr std::uint64_t kReportBytesPerEvent = 400;

}  // namespace gpudiag
