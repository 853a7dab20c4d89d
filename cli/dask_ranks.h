// `gpudiag report --dask`: each rank's summary made by a task on a Dask
// cluster, as Nsight Systems' recipes run theirs (`--mode dask-futures`);
// the merge is then the same as after the local threads. The tasks are sent
// by a Python driver shipped with gpudiag (job/python/gpudiag_dask.py), run
// with the Debian python3; each runs `gpudiag report --rank-summary` on a
// worker, which must see the traces (and this gpudiag, or one on its PATH)
// at the same paths: a shared file system.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpudiag/job/analyse_ranks.h"

namespace gpudiag::cli {

struct DaskRanksOptions {
  // "local" (a cluster on this machine, its workers threads that each run a
  // gpudiag process), a scheduler's address ("tcp://host:8786"), or the
  // scheduler file `dask scheduler --scheduler-file FILE` writes.
  std::string scheduler;
  unsigned workers = 0;                // the local cluster's; 0 one per core
  std::uint64_t memory_bytes = 0;      // each task's (--memory); 0 the worker's default. Shared on "local".
  std::vector<std::string> rank_args;  // the report options that change a rank's analysis, as given
  std::string html_dir;                // each rank's page, as AnalyseRanksOptions::html_dir ("" none)
};

// The cluster could not be used at all (no python3, no dask.distributed, no
// scheduler): one line saying why.
struct DaskError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// As analyse_ranks: the summaries and pages of the traces that could be
// read, in input order, and "FILE: why (Dask worker ADDRESS)" for each that
// could not. Throws DaskError.
RankAnalysis analyse_ranks_on_dask(const std::vector<std::string>& paths, const DaskRanksOptions& options);

}  // namespace gpudiag::cli
