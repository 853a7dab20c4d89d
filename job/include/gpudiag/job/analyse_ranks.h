// Each rank's trace analysed on its own, on the local cores: loaded,
// analysed and summarised, its page written when asked, then dropped, so a
// worker holds one trace at a time and the merge holds only summaries.
#pragma once

#include <string>
#include <vector>

#include "gpudiag/job/rank_summary.h"
#include "gpudiag/report/load_and_analyze.h"

namespace gpudiag {

// The trace files that `gpudiag report` inputs name: a file as it is; a
// folder, every trace in it (.gdtrace, .json, .json.gz, .sqlite; not the
// sidecars beside a trace, pages, or a bounded trace's segment files); a
// glob pattern, its matches. Sorted, each once. Throws TraceError for an
// input that is none of these or a folder or glob without a trace.
std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs);

struct AnalyseRanksOptions {
  LoadOptions load;          // memory_bytes is shared among the workers
  unsigned workers = 0;      // 0: one per core, at most one per trace
  // Write each rank's own page as <html_dir>/<file name>.html ("" none);
  // RankAnalysis::pages then holds each one's path.
  std::string html_dir;
};

struct RankAnalysis {
  std::vector<RankSummary> summaries;  // of the traces that could be read, in input order
  std::vector<std::string> pages;      // summaries[i]'s page, "" none
  std::vector<std::string> errors;     // "FILE: why it could not be read", one per trace that could not
};

RankAnalysis analyse_ranks(const std::vector<std::string>& paths, const AnalyseRanksOptions& options);

// One trace's summary, as a worker makes it (`gpudiag report --rank-summary`).
RankSummary summarize_trace(const std::string& path, const LoadOptions& load);

}  // namespace gpudiag
