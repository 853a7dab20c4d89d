// launch-bound (GD011), gdrt: the UNet is tiny and is trained one image at a
// time. Every step launches a few hundred kernels that each have almost
// nothing to do (one 32x32 image, 4 channels), so the device spends most of
// the loop waiting between kernels rather than computing: the cost of a step
// is its launches, not its arithmetic. The fixed twin trains on batches of
// 32, the same kernels doing 32 times the work each (fixed.cpp).
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
  options.batch_size = 1;  // one image per step
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
