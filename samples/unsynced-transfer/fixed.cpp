// unsynced-transfer (GD003), gdrt, fixed: the predictions still come back with
// a non-blocking copy, but the host waits for the device before it reads
// them (buggy.cpp reads at once).
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

  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      adam.zero_grad();
      Tensor loss = binary_cross_entropy_with_logits(model(batch->input.to(device)), batch->target.to(device));
      loss.backward();
      adam.step();
    }
  }

  model.eval();
  NoGrad no_grad;
  options.batch_size = 16;
  options.shuffle = false;
  data::DataLoader val(std::make_shared<samples::SyntheticShapes>(16, 32, 99), options);
  val.start_epoch(0);
  const data::Batch b = *val.next();
  Tensor mask = gt(model(b.input.to(device)), 0.0).to(DType::f32);
  Tensor pred = mask.to(cpu_device(), /*non_blocking=*/true);  // overlaps the copy with the host work below
  synchronize(device);                                           // the copy has landed
  const std::vector<float> early = pred.to_vector<float>();
  const std::vector<float> target = b.target.to_vector<float>();
  double inter = 0, uni = 0;
  for (std::size_t i = 0; i < early.size(); ++i) {
    inter += early[i] * target[i];
    uni += early[i] + target[i] - early[i] * target[i];
  }
  std::printf("val IoU %.3f\n", inter / uni);  // every batch has shapes: uni > 0

  // What the copy really brought, once it has landed: how much of the
  // metric above was computed from values that were not the predictions.
  synchronize(device);
  const std::vector<float> landed = pred.to_vector<float>();
  std::size_t stale = 0;
  for (std::size_t i = 0; i < landed.size(); ++i) stale += !(early[i] == landed[i]);
  if (stale > 0) std::printf("symptom: %zu of %zu predictions were read before the copy landed\n", stale, landed.size());
  else std::printf("all %zu predictions were read after the copy landed\n", landed.size());
}
