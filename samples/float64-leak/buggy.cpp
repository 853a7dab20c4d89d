// float64-leak (GD002), gdrt: the inputs are normalised with per-channel
// statistics written as a std::vector<double>, the C++ habit, so the mean and
// standard deviation become Float64 tensors and the first subtraction mixes
// them with the Float32 images. On a GPU, Float64 math runs at a fraction of
// the Float32 rate (PyTorch would promote the batch to Float64 silently, and
// fail later in the convolution); gdrt refuses the mix and the program dies
// of the GD002 error that names both tensors.
// The fixed twin keeps the statistics in float (fixed.cpp).
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

  // Per-channel statistics of the training images, to normalise the inputs.
  const std::vector<double> mean{0.15, 0.10, 0.20}, stdev{0.70, 0.66, 0.77};
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
