// sync-in-loop (GD010), gdrt: to see where a step's time goes, the loop
// times the forward pass, the backward pass and the optimizer separately,
// and synchronises the device after each so that the timer measures the
// work rather than its launch. Every step now drains the device's queue
// three times: the host cannot queue the next phase while the device runs
// this one, and the device idles while the host launches. The fixed twin
// times whole epochs and synchronises once per epoch (fixed.cpp).
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
    double forward = 0, backward = 0, update = 0;
    Tensor total;  // the epoch's loss, summed on the device
    int steps = 0;
    while (auto batch = loader.next()) {
      TrainingStep step;
      const auto t0 = Clock::now();
      adam.zero_grad();
      Tensor loss = binary_cross_entropy_with_logits(model(batch->input.to(device)), batch->target.to(device));
      synchronize(device);  // wait for the forward pass, so t1 - t0 is its time
      const auto t1 = Clock::now();
      loss.backward();
      synchronize(device);  // the same for the backward pass
      const auto t2 = Clock::now();
      adam.step();
      synchronize(device);  // and the optimizer
      const auto t3 = Clock::now();
      forward += ms(t0, t1);
      backward += ms(t1, t2);
      update += ms(t2, t3);
      total = total.defined() ? add(total, loss.detach()) : loss.detach();
      ++steps;
    }
    const double train_loss = total.to_vector<float>()[0] / steps;
    std::printf("epoch %d: train loss %.4f, %.1f ms per step (forward %.1f, backward %.1f, optimizer %.1f)\n",
                epoch + 1, train_loss, (forward + backward + update) / steps, forward / steps, backward / steps,
                update / steps);
  }
}
