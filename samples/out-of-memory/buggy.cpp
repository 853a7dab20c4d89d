// out-of-memory (GD008), gdrt: after training, the model is evaluated with a
// batch four times the training one ("evaluation keeps no gradients, so a
// bigger batch fits"). But the evaluation loop forgot NoGrad: with autograd
// on, the forward keeps every activation for a backward that never comes,
// so one evaluation batch holds four training steps' worth of activations
// and the device runs out. The fixed twin evaluates under NoGrad (fixed.cpp).
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
  options.batch_size = 64;  // 4x the training batch
  options.shuffle = false;
  data::DataLoader val(std::make_shared<samples::SyntheticShapes>(128, 32, 99), options);
  val.start_epoch(0);
  Tensor inter = zeros({}, TensorOptions{}.with_device(device)), uni = zeros({}, TensorOptions{}.with_device(device));
  while (auto batch = val.next()) {
    Tensor mask = gt(model(batch->input.to(device)), 0.0).to(DType::f32);
    Tensor target = batch->target.to(device);
    inter = inter + sum(mask * target);
    uni = uni + sum(mask + target - mask * target);
  }
  const double i = inter.to(cpu_device()).item(), u = uni.to(cpu_device()).item();
  std::printf("val IoU %.3f\n", u > 0 ? i / u : 1.0);
}
