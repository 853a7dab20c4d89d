// The names `gpudiag trace` gives the traces of a run once it is over.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpudiag::cli {

// Renames the trace at `from` to `to`, and the files a Python program wrote
// beside it (the allocator history, the snapshot at an out-of-memory) with
// it; what an earlier run left beside `to` goes, so that no report reads it
// as this run's. False when the trace could not be renamed.
bool move_trace(const std::string& from, const std::string& to);

struct NamedTraces {
  std::vector<std::string> traces;    // the root's first, then by rank, then the others
  std::vector<std::string> warnings;  // one line each
};

// `gpudiag trace -o DIR`: each process's trace whose Identity says a rank
// becomes DIR/rank<N>.gdtrace; the root's, without one, DIR/launcher.gdtrace
// when others have one (it is torchrun, mpirun or srun), else `root_name`;
// any other keeps its pid name. Two traces that say one rank keep their pid
// names, with a warning. The rank and launcher files of an earlier run (last
// written before `started`) go. `root`: the root process's pid-named trace,
// "" when it wrote none.
NamedTraces name_traces_by_rank(const std::string& root, const std::string& root_name,
                                const std::vector<std::string>& children, const std::filesystem::path& dir,
                                std::filesystem::file_time_type started);

}  // namespace gpudiag::cli
