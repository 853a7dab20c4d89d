// device-mismatch (GD001), gdrt: the model is moved to the GPU, but the
// batches go into it as the loader made them, on the host: `.to(device)` was
// forgotten on the batch. gdrt never moves data behind the user's back, so
// the first convolution gets weights on the device and an input on the host,
// and the program dies of the GD001 error naming both devices.
// The fixed twin moves each batch to the model's device (fixed.cpp).
#include <cstdio>

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

  Tensor loss;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      const Tensor input = batch->input, target = batch->target;  // still on the host
      adam.zero_grad();
      loss = binary_cross_entropy_with_logits(model(input), target);
      loss.backward();
      adam.step();
    }
  }
  std::printf("final loss %.4f\n", loss.to(cpu_device()).item());
}
