// Rank summaries built in code, for the merge's tests: a training loop of
// steps with a collective at the end of each, on a job-wide clock in ms.
#pragma once

#include <cstdint>
#include <string>

#include "gpudiag/job/rank_summary.h"

namespace gpudiag::test {

constexpr std::uint64_t ms(double v) { return static_cast<std::uint64_t>(v * 1e6); }

struct LoopShape {
  int steps = 10;
  double step_ms = 100;        // every rank's step (they wait for each other)
  double own_ms = 80;          // the rank's own work in it; the rest is in the step's all_reduce
  double data_loading_ms = 10;
  std::uint64_t bytes = 4 << 20;
};

// Rank `rank` of `world` running `shape`: step i runs from i*step_ms, its
// all_reduce (#i of group "0") from own_ms into it to its end.
inline RankSummary rank_running(int rank, int world, const LoopShape& shape = {}) {
  RankSummary s;
  s.path = "rank" + std::to_string(rank) + ".gdtrace";
  s.source = "gdtrace";
  s.job.rank = rank;
  s.job.world_size = world;
  s.clock = "epoch";
  s.begin_ns = 0;
  for (int i = 0; i < shape.steps; ++i) {
    const std::uint64_t b = ms(i * shape.step_ms), e = ms((i + 1) * shape.step_ms);
    RankCollective c;
    c.op = "all_reduce";
    c.group = "0";
    c.seq = i;
    c.seq_from_source = true;
    c.bytes = shape.bytes;
    c.begin_ns = b + ms(shape.own_ms);
    c.end_ns = e;
    s.collectives.push_back(c);
    s.steps.push_back({.number = i, .begin_ns = b, .end_ns = e, .collective_ns = e - c.begin_ns,
                       .data_loading_ns = ms(shape.data_loading_ms), .gpu_busy_ns = 0});
  }
  s.end_ns = ms(shape.steps * shape.step_ms);
  s.exit_status = 0;
  return s;
}

inline Finding finding(const char* rule, Severity severity, std::string message, std::string function = "") {
  Finding f;
  f.rule_id = rule;
  f.severity = severity;
  f.message = std::move(message);
  if (!function.empty()) f.stack.push_back(Frame{.function = function, .module = "", .file = "train.py", .line = 40, .address = 0});
  return f;
}

}  // namespace gpudiag::test
