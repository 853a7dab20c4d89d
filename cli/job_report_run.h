// `gpudiag report` on several traces (a folder, files, a glob): one job
// report, each rank analysed in parallel on the local cores, or as tasks on a
// Dask cluster (dask_ranks.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpudiag/report/load_and_analyze.h"

namespace gpudiag::cli {

struct JobReportOptions {
  std::vector<std::string> inputs;
  bool json = false, sarif = false, color = false;
  std::string html;    // the job page; each rank's page goes to <html>.ranks/
  std::string output;  // "" stdout
  std::optional<Severity> fail_on = Severity::Error;  // none: exit 0 whatever is found
  unsigned workers = 0;  // 0: one per core
  LoadOptions load;
  // "" the local threads; else the Dask scheduler (DaskRanksOptions::scheduler)
  // and the report options that change a rank's analysis, for its workers.
  std::string dask;
  std::vector<std::string> rank_args;
};

// The exit status: 0, 1 (a finding or job fact at or above --fail-on), 2 (bad input).
int run_job_report(const JobReportOptions& options);

// `gpudiag report --rank-summary TRACE`: the summary a job report merges, as
// JSON, for workers elsewhere (Dask) to hand back; and the rank's own page
// when `html` names one.
int run_rank_summary(const std::string& input, const std::string& output, const std::string& html,
                     const LoadOptions& load);

}  // namespace gpudiag::cli
