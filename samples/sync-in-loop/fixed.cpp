// sync-in-loop (GD010), gdrt, fixed: the loop queues each step without
// waiting for the device, and the time is taken per epoch, ending at the
// epoch's one read of its loss, which waits for the epoch's work (buggy.cpp
// synchronises after the forward pass, the backward pass and the optimizer
// of every step to time them apart; a profiler trace gives that split
// without stalling the loop).
#include <chrono>
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;
using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

int main() {
  const Device device = preferred_device();
  nn::UNet model({3, 1, 8, 2, true, 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {3e-3});
  data::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = true;
  data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(128, 32, 1), options);

  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    const auto t0 = Clock::now();
    Tensor total;  // the epoch's loss, summed on the device
    int steps = 0;
    while (auto batch = loader.next()) {
      TrainingStep step;
      adam.zero_grad();
      Tensor loss = binary_cross_entropy_with_logits(model(batch->input.to(device)), batch->target.to(device));
      loss.backward();
      adam.step();
      total = total.defined() ? add(total, loss.detach()) : loss.detach();
      ++steps;
    }
    const double train_loss = total.to_vector<float>()[0] / steps;  // waits for the epoch's work
    std::printf("epoch %d: train loss %.4f, %.1f ms per step\n", epoch + 1, train_loss, ms(t0, Clock::now()) / steps);
  }
}
