// launch-bound (GD011), gdrt, fixed: the same tiny UNet trained on batches of
// 32 images, so each kernel has 32 times the work and a step's launches are
// paid once per 32 images (buggy.cpp trains one image at a time).
#include <chrono>
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;
using Clock = std::chrono::steady_clock;

int main() {
  const Device device = preferred_device();
  nn::UNet model({3, 1, 4, 2, true, 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {3e-3});
  data::LoaderOptions options;
  options.batch_size = 32;  // 32 images per step: the same launches, 32 times the work
  options.shuffle = true;
  data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(64, 32, 1), options);

  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    const auto t0 = Clock::now();
    Tensor total;
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
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("epoch %d: train loss %.4f, %.0f images/s\n", epoch + 1, train_loss, 64 / secs);
  }
}
