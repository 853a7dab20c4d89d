// One rank's part of a job report: what the merge needs of a rank's trace,
// and nothing that grows with its events but its steps. Each
// rank's trace is loaded, analysed and summarised on its own (in parallel,
// or as a Dask task), then dropped; the merge (job_report.h) reads only
// summaries, so its memory does not grow with the traces' size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpudiag/finding.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace.h"

namespace gpudiag {

// How a rank's run failed, where its trace says it did. Times are on the
// job's clock (RankSummary::clock).
struct RankFailure {
  // "crash" (a fatal signal), "out-of-memory", "cuda-error" (a CUDA call
  // that failed), "exit" (a non-zero exit status), "stopped" (the trace ends
  // while its peers went on: a Kineto trace does not say why).
  std::string kind;
  std::uint64_t time_ns = 0;
  std::string what;          // "SIGSEGV", "GD008 out-of-memory: ...", "exit status 1"
  std::int64_t step = -1;    // the profiler step or iteration it happened in, -1 none
  std::vector<Frame> stack;  // where, when the trace has it
};

struct RankCollective {
  std::string op, group;
  std::int64_t seq = 0;      // the source's, or its index among the group's collectives in the trace
  bool seq_from_source = false;
  std::uint64_t bytes = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;  // the job's clock
  bool unfinished = false;
  std::vector<Frame> stack;  // where it was called, when the trace has it (innermost first, a few frames)
};

// A group's collectives before the last kept ones, as NCCL's flight recorder
// keeps only the last calls: how many, and the signature of the ops and sizes
// so far after every `every` calls, so that two ranks' earlier sequences can
// still be told equal or not, and where they part within `every` calls.
struct RankCollectivesDropped {
  std::string group;
  std::int64_t count = 0;  // a multiple of every
  std::int64_t every = 0;
  std::vector<std::uint64_t> signatures;  // after calls every, 2 * every, ..., count
};
struct CollectiveWindow {
  std::size_t kept = 4096;  // at least this many of each group's last calls are kept
  std::size_t signature_every = 1024;
};

// One iteration of the training loop and where its time went, from the
// host's point of view: time in collectives (waiting for peers included),
// in data loading (the DataLoader's ranges), on the GPU, and the rest.
struct RankStep {
  std::int64_t number = 0;  // ProfilerStep#N's N, else the iteration's index
  std::uint64_t begin_ns = 0, end_ns = 0;
  std::uint64_t collective_ns = 0, data_loading_ns = 0, gpu_busy_ns = 0;
  std::uint64_t length() const { return end_ns - begin_ns; }
  // What the rank did itself: the step less its time in collectives.
  std::uint64_t own_ns() const { return length() > collective_ns ? length() - collective_ns : 0; }
};

// A device's GPU time as HTA's temporal breakdown counts it
// (analysis/temporal_breakdown.h): its window, idle, computation,
// communication and the communication no computation hides.
struct RankGpuTime {
  std::int32_t device = 0;
  std::uint64_t total_ns = 0, idle_ns = 0, computation_ns = 0, communication_ns = 0, exposed_comm_ns = 0,
                memcpy_ns = 0;
};

struct RankSummary {
  std::string path;
  std::string source;  // "gdtrace", "kineto", "nsys", ...
  JobPlace job;
  std::int64_t pid = 0;
  std::int32_t exit_status = -1;
  // "epoch": times are UNIX epoch ns, comparable across hosts; "trace": the
  // trace's own clock (comparable between processes of one host only when
  // every trace of the job uses the same clock).
  std::string clock = "trace";
  std::uint64_t clock_uncertainty_ns = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;
  std::vector<std::string> warnings;  // what the trace may be missing (report_warnings' messages)
  std::vector<Finding> findings;
  std::optional<RankFailure> failure;
  std::vector<RankCollective> collectives;  // in time order, each group's last ones (CollectiveWindow)
  std::vector<RankCollectivesDropped> collectives_dropped;  // the groups that had more
  std::vector<RankStep> steps;
  struct Peak {
    std::int32_t device = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Peak> peaks;
  std::vector<RankGpuTime> gpu_time;
  std::uint64_t peak_bytes() const;
  // "rank 3", or the file's name when the trace does not say its rank.
  std::string name() const;
};

// The summary of one analysed trace.
RankSummary summarize_rank(const Trace& trace, const Report& report, CollectiveWindow window = {});
// The signature of a sequence of collectives: `signature` of the ones
// before (0 for none), then `c`.
std::uint64_t collective_signature(std::uint64_t signature, const RankCollective& c);

// The summary as JSON and back, for summaries made elsewhere (Dask workers,
// `gpudiag report --rank-summary`). from_json throws std::runtime_error
// naming what is wrong on JSON that is not a summary of this version.
inline constexpr int kRankSummaryVersion = 1;
nlohmann::json to_json(const RankSummary& summary);
RankSummary rank_summary_from_json(const nlohmann::json& j);

}  // namespace gpudiag
