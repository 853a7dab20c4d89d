// A job of many ranks made from one real rank's PyTorch profiler trace (a
// CPU DDP job with gloo), with a straggler, a desync and an out-of-memory
// planted, each on a rank of its own. Every rank is the source renumbered
// (distributedInfo, process and thread ids) and shifted by up to 0.1 ms.
// The faults are planted for the job report to find, not played out: the
// other ranks' traces go on to the end, where a real job would hang or fail
// after a desync or a rank's death.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpudiag::bench {

struct PlantedJob {
  std::vector<std::string> files;  // rank r's trace
  std::uint64_t bytes = 0;         // of all of them, on disk
  std::size_t source_events = 0, source_steps = 0, source_collectives = 0;
  bool source_had_data_loading = false;  // else a 0.5 ms `data_loading` range was put at each step's start

  // The straggler's data loading takes `straggler_wait_ms` longer in each of
  // `straggled_steps` steps, and all it does later is that much later; every
  // other rank waits for it as long in its first collective after its own
  // data loading (the gloo run grows), and goes on that much later.
  int straggler = -1;
  double straggler_wait_ms = 0;
  std::size_t straggled_steps = 0;
  // The desync: this rank does not make its collective call number
  // `dropped` (of the trace's, from 0), so its next call stands where the
  // others make that one.
  int desync = -1;
  std::size_t dropped = 0;
  std::string dropped_call;  // "c10d::allreduce_ (gloo:all_reduce of float [[]]) in ProfilerStep#3"
  // The out-of-memory: an allocation fails in step `oom_step`, between its
  // data loading and its first collective; the trace ends there.
  int oom = -1;
  std::int64_t oom_step = -1;
  std::string oom_format;  // "gdtrace", or "kineto" when a .gdtrace would lose what the job report needs
  std::string oom_format_why;
};

// Writes `ranks` traces into `folder` (which must exist).
PlantedJob make_job(const std::string& source, const std::string& folder, int ranks, double straggler_wait_ms);

}  // namespace gpudiag::bench
