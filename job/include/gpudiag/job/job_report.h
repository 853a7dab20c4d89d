// The job report: every rank's summary merged into one account of a
// distributed run. Findings once per rule and site with the ranks they were
// on; the ranks of the world that left no trace; the rank that failed first
// and what every other rank was doing then; the first collective where the
// ranks' sequences differ; the straggler and why; memory and GPU time per
// rank. It reads summaries only (rank_summary.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpudiag/emit.h"
#include "gpudiag/job/rank_summary.h"

namespace gpudiag {

struct JobOptions {
  // A rank is a straggler when its own work per step (the step less its time
  // in collectives) is at least this many times the median of the other
  // ranks', and longer by at least straggler_min_ns.
  double straggler_ratio = 1.25;
  std::uint64_t straggler_min_ns = 1'000'000;
  // ... and did the most own work in at least this share of the steps.
  double straggler_steps = 0.75;
  // A rank "stopped" first (a trace that does not say why) only when a peer
  // then waited in a collective at least this long.
  std::uint64_t stopped_wait_ns = 1'000'000'000;
};

// "0-2, 4-7", "3"
std::string rank_list(const std::vector<std::int32_t>& ranks);

struct JobFinding {
  Finding finding;                  // the lowest rank's, severity the highest of all
  std::vector<std::int32_t> ranks;  // where it was found: ranks, or places in JobReport::ranks when not ranked
  std::int32_t message_rank = 0;    // whose message and numbers `finding` carries
};

// What one rank was doing at a moment.
struct RankActivity {
  std::int32_t rank = 0;
  // "collective": in `collective` (waited `waited_ns`, `unfinished` if it
  // never returned); "step": running step `step`; "ended": its trace had
  // already ended; "other": none of those.
  std::string state;
  std::string collective;  // "all_reduce #41 (group 0)"
  std::uint64_t waited_ns = 0;
  bool unfinished = false;
  std::int64_t step = -1;
};

struct FirstFailure {
  std::int32_t rank = 0;
  RankFailure failure;
  std::vector<RankActivity> others;  // every other rank that left a trace
  // The whole account: "rank 3 failed first: out-of-memory at step 5 ...;
  // ranks 0-2 waited in all_reduce #12 (group 0) for 5.0 s".
  std::string message;
};

struct Desync {
  std::string group;
  std::int64_t seq = 0;  // the first position where the ranks differ
  struct Side {
    std::vector<std::int32_t> ranks;
    std::string call;            // "all_reduce of 4 B", or "none: its trace has no more collectives"
    std::vector<Frame> stack;    // the first rank's stack for it
  };
  std::vector<Side> sides;  // the majority first
  std::string message;
};

struct Straggler {
  std::int32_t rank = 0;
  std::uint64_t own_ns = 0, others_own_ns = 0;  // median per step
  std::uint64_t others_wait_ns = 0;             // median per step of the others' time in collectives
  std::string why;   // "data loading", "GPU time", "host time"
  std::uint64_t why_excess_ns = 0;
  std::string message;
};

struct JobReport {
  std::vector<RankSummary> ranks;  // sorted by rank (unranked last, by path)
  // Every trace says its rank: ranks are named by it. Otherwise each trace
  // is named by its place in `ranks` ("trace 2").
  bool ranked = false;
  std::int32_t world_size = 0;     // 0: no trace said it
  std::vector<std::int32_t> missing_ranks;
  std::vector<std::string> problems;  // traces that say contradictory things (two files of one rank, different world sizes)
  std::vector<JobFinding> findings;   // by severity, then rule
  std::optional<FirstFailure> first_failure;
  std::optional<Desync> desync;
  std::optional<Straggler> straggler;
  // The job's own findings (missing ranks, first failure, desync,
  // straggler) as SARIF notifications and JSON, with the severity each has.
  struct Fact {
    std::string id;  // "missing-ranks", "first-failure", "desync", "straggler"
    Severity severity = Severity::Warning;
    std::string message;
  };
  std::vector<Fact> facts;
};

JobReport merge_job(std::vector<RankSummary> ranks, const JobOptions& options = {});

// The highest severity among the merged findings and the job's facts.
std::optional<Severity> worst_severity(const JobReport& job);

void print_job_summary(std::ostream& out, const JobReport& job, bool color);
nlohmann::json job_json(const JobReport& job);
void emit_job_sarif(std::ostream& out, const JobReport& job, SarifOptions options);
// The job page: findings first, a rank x time overview, memory and GPU time
// per rank, and links to rank_pages[i] (relative paths, "" none) for ranks[i].
void write_job_html(std::ostream& out, const JobReport& job, const std::vector<std::string>& rank_pages);

}  // namespace gpudiag
