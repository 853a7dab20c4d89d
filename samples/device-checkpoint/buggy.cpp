// device-checkpoint (GD012), gdrt: after training, the weights are exported
// as raw float32 for the C inference code, straight from each parameter's
// data_ptr(). The model is still on the GPU, so those are device pointers:
// the host cannot read them. On emu (as on CUDA) the write faults and the
// program dies of SIGSEGV (gdrt's fault handler names it GD001); where it
// does not fault, the file holds garbage.
// The fixed twin copies each parameter to the host first (fixed.cpp).
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
  for (const auto& [name, weight] : model.named_parameters())
    floats += std::fwrite(weight.data_ptr(), sizeof(float), static_cast<std::size_t>(weight.numel()), file);
  std::fclose(file);
  std::printf("exported %zu weights to unet_weights.bin\n", floats);
}
