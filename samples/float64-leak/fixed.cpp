// float64-leak (GD002), gdrt, fixed: the per-channel statistics that
// normalise the inputs are float, so they stay Float32 tensors like the
// images and the model (the buggy twin wrote them as double: buggy.cpp).
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

  // Per-channel statistics of the training images, to normalise the inputs: float, as the model computes.
  const std::vector<float> mean{0.15f, 0.10f, 0.20f}, stdev{0.70f, 0.66f, 0.77f};
  const Tensor mu = from_vector(mean, {1, 3, 1, 1}).to(device), sigma = from_vector(stdev, {1, 3, 1, 1}).to(device);

  Tensor loss;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      const Tensor input = div(sub(batch->input.to(device), mu), sigma), target = batch->target.to(device);
      adam.zero_grad();
      loss = binary_cross_entropy_with_logits(model(input), target);
      loss.backward();
      adam.step();
    }
  }
  std::printf("final loss %.4f\n", loss.to(cpu_device()).item());
}
