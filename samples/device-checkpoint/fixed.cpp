// device-checkpoint (GD012), gdrt, fixed: the weights are exported as raw
// float32 from host copies of the parameters, since the model is still on
// the GPU and its data_ptr()s are device pointers the host cannot read (the
// buggy twin wrote them straight from the device: buggy.cpp). A gdrt
// checkpoint (save_checkpoint) would copy to the host by itself.
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

  // Export the weights as raw float32, in named_parameters() order.
  std::FILE* file = std::fopen("unet_weights.bin", "wb");
  std::size_t floats = 0;
  for (const auto& [name, weight] : model.named_parameters()) {
    const Tensor host = weight.to(cpu_device());  // data_ptr() of a device tensor is a device pointer
    floats += std::fwrite(host.data_ptr(), sizeof(float), static_cast<std::size_t>(host.numel()), file);
  }
  std::fclose(file);
  std::printf("exported %zu weights to unet_weights.bin\n", floats);
}
