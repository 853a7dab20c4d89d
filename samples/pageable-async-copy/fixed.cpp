// pageable-async-copy (GD009), gdrt, fixed: the DataLoader builds the
// batches in pinned host memory, so the non_blocking copies really are
// queued and the call returns at once (buggy.cpp copies from pageable
// batches, and each copy waits for the previous step).
#include <chrono>
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int main() {
  const Device device = preferred_device();
  nn::UNet model({3, 1, 8, 2, true, 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {3e-3});
  data::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = true;
  options.pin_memory = true;  // batches in pinned memory: the copy engine reads them when the copy runs
  data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(128, 32, 1), options);

  double in_copies = 0;  // host time spent in the copy calls
  int steps = 0;
  const auto loop = Clock::now();
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      const auto start = Clock::now();
      Tensor input = batch->input.to(device, /*non_blocking=*/true);  // meant to overlap the previous step
      Tensor target = batch->target.to(device, /*non_blocking=*/true);
      in_copies += ms_since(start);
      adam.zero_grad();
      Tensor loss = binary_cross_entropy_with_logits(model(input), target);
      loss.backward();
      adam.step();
      ++steps;
    }
  }
  synchronize(device);

  const double total = ms_since(loop), share = in_copies / total;
  std::printf("%d steps in %.1f ms; the non-blocking batch copies held the host %.1f ms of it (%.0f%%)\n", steps, total,
              in_copies, 100 * share);
  if (share > 0.25) std::printf("symptom: the asynchronous copies blocked the host for most of the training loop\n");
}
