// Marks the iterations of a training loop for gpudiag. A trace then knows
// where each step began and ended: start-up stays apart from the loop, and
// the rules judged per iteration (scalar reads, pageable copies, syncs in the
// loop, launch-bound steps) are judged on these steps rather than on a
// repeating kernel sequence guessed from the trace.
//
//   while (auto batch = loader.next()) {
//     gdrt::TrainingStep step;  // one iteration, until the end of the block
//     ...
//   }
//
// Steps are numbered in the order they start, from 0, across the process.
// Costs one relaxed load when no trace is being recorded.
#pragma once

#include <cstdint>

namespace gdrt {

class TrainingStep {
 public:
  TrainingStep();
  ~TrainingStep();
  TrainingStep(const TrainingStep&) = delete;
  TrainingStep& operator=(const TrainingStep&) = delete;

  std::int64_t number() const { return number_; }

 private:
  std::int64_t number_;
  std::uint64_t start_ns_;
};

}  // namespace gdrt
