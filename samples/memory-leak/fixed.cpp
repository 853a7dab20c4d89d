// memory-leak (GD007), gdrt, fixed: the Dice loss is still summed on the
// device and read once, but from logits.detach(): the sum is a value with no
// graph, so nothing a step made outlives it (buggy.cpp sums it with autograd
// on and keeps every step's graph).
#include <cstdio>
#include <vector>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;

int main() {
  const Device device = preferred_device();
  nn::UNet model({3, 1, 8, 2, true, 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {3e-3});
  data::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = true;
  data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(128, 32, 1), options);

  Tensor dice_sum = zeros({}, TensorOptions{}.with_device(device));
  std::vector<std::size_t> live;  // device memory the program holds after each step
  for (int epoch = 0; epoch < 3; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      adam.zero_grad();
      Tensor target = batch->target.to(device);
      Tensor logits = model(batch->input.to(device));
      Tensor loss = binary_cross_entropy_with_logits(logits, target);
      loss.backward();
      adam.step();
      dice_sum = dice_sum + dice_loss(logits.detach(), target);  // a value, no graph
      live.push_back(memory_allocated(device));
    }
  }
  const double dice = dice_sum.to(cpu_device()).item() / static_cast<double>(live.size());
  std::printf("mean Dice loss over %zu steps: %.3f\n", live.size(), dice);

  // The first step makes what every later one reuses (gradients, Adam's
  // state); from then on a healthy loop holds the same memory after each step.
  const std::size_t first = live.front(), last = live.back();
  if (last > first)
    std::printf("symptom: live device memory grew from %zu KiB to %zu KiB over %zu steps (%zu KiB per step)\n",
                first >> 10, last >> 10, live.size() - 1, ((last - first) / (live.size() - 1)) >> 10);
  else
    std::printf("live device memory stayed at %zu KiB over %zu steps\n", first >> 10, live.size());
}
