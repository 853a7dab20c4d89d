// scalar-indexing (GD005), gdrt, fixed: the validation IoU is still counted
// pixel by pixel, but from a host copy of the predicted mask made with one
// transfer (buggy.cpp reads every pixel from the device with at()).
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;

int main() {
  try {
    const Device device = preferred_device();
    nn::UNet model({3, 1, 8, 2, true, 1});
    model.to(device);
    optim::Adam adam(model.named_parameters(), {3e-3});
    data::LoaderOptions options;
    options.batch_size = 16;
    options.shuffle = true;
    data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(128, 32, 1), options);
    options.shuffle = false;
    data::DataLoader val(std::make_shared<samples::SyntheticShapes>(16, 32, 99), options);

    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch);
      while (auto batch = loader.next()) {
        TrainingStep step;
        adam.zero_grad();
        Tensor loss = binary_cross_entropy_with_logits(model(batch->input.to(device)), batch->target.to(device));
        loss.backward();
        adam.step();
      }

      model.eval();
      NoGrad no_grad;
      val.start_epoch(0);
      const data::Batch b = *val.next();
      const std::vector<float> mask = gt(model(b.input.to(device)), 0.0).to(DType::f32).to_vector<float>();  // one copy
      const std::vector<float> target = b.target.to_vector<float>();
      double inter = 0, uni = 0;
      std::size_t i = 0;
      for (std::int64_t n = 0; n < b.target.size(0); ++n)
        for (std::int64_t y = 0; y < b.target.size(2); ++y)
          for (std::int64_t x = 0; x < b.target.size(3); ++x, ++i) {
            const double p = mask[i], t = target[i];
            inter += p * t;
            uni += p + t - p * t;
          }
      std::printf("epoch %d: val IoU %.3f\n", epoch + 1, uni > 0 ? inter / uni : 1.0);
      model.train();
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "fixed: %s\n", e.what());
    return 1;
  }
}
