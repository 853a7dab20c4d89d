// Edits of a PyTorch profiler (Kineto) trace held as JSON, to make the
// ranks of a job from one real rank: time made longer at a moment, events
// taken out, the trace cut at a moment, the rank renumbered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpudiag::bench {

using nlohmann::json;

double start_us(const json& event);
double end_us(const json& event);  // its start when it has no duration

// Where a rank's training loop lies in trace["traceEvents"]: indexes, each
// list in time order.
struct KinetoLayout {
  std::vector<std::size_t> steps;         // ProfilerStep#N
  std::vector<std::size_t> data_loading;  // enumerate(DataLoader)#..., or ranges named data_loading
  std::vector<std::size_t> calls;         // c10d::allreduce_ ...: the program's collective calls
  std::vector<std::size_t> runs;          // gloo:all_reduce ...: gloo's workers running them
};
KinetoLayout layout_of(const json& trace);

// `extra_us` more time at `at_us`: what starts from then on starts later,
// what is running then (on any thread) lasts longer.
void insert_time(json& trace, double at_us, double extra_us);

// Takes out the events at `indexes` and the events inside them on their thread.
void drop_events(json& trace, const std::vector<std::size_t>& indexes);

// Ends the trace at `at_us`: what starts later is gone, what is running
// then ends `close_us` later (the exception unwinding through it), and the
// profiler's "Record Window End" is there.
void cut_at(json& trace, double at_us, double close_us);

// Makes the trace rank `rank` of `world_size` (distributedInfo), its process
// and thread ids moved by `id_offset` and its times by `shift_us`.
void make_rank(json& trace, int rank, int world_size, std::int64_t id_offset, double shift_us);

}  // namespace gpudiag::bench
