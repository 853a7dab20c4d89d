// premature-free (GD004), gdrt: the training IoU is measured on a side
// stream so that it overlaps the next step. The logits and masks it reads
// are dropped at the end of the step without record_stream: the allocator
// only knows the stream they were allocated on, so the next step gets their
// memory at once and overwrites it while the metrics stream, still busy
// with the first thresholds, has not read them yet: the logged IoU is
// computed partly from the next step's tensors. fixed.cpp records them on
// the metrics stream.
#include <cmath>
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

using namespace gdrt;

// IoU of the predicted mask, averaged over probability thresholds 0.1 .. 0.9.
Tensor mean_iou(const Tensor& logits, const Tensor& target) {
  Tensor total;
  for (int k = 1; k <= 9; ++k) {
    Tensor pred = gt(logits, std::log(k / (10.0 - k))).to(DType::f32);
    Tensor inter = sum(pred * target);
    Tensor iou = inter / (sum(pred) + sum(target) - inter + 1e-6);
    total = total.defined() ? total + iou : iou;
  }
  return total / 9.0;
}

int main() {
  const Device device = preferred_device();
  nn::UNet model({3, 1, 8, 2, true, 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {3e-3});
  data::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = true;
  data::DataLoader loader(std::make_shared<samples::SyntheticShapes>(128, 32, 1), options);
  const Stream metrics = Stream::create(device, StreamFlags::non_blocking);

  std::vector<Tensor> logged, safe;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    while (auto batch = loader.next()) {
      TrainingStep step;
      adam.zero_grad();
      Tensor target = batch->target.to(device);
      Tensor logits = model(batch->input.to(device));
      Tensor loss = binary_cross_entropy_with_logits(logits, target);
      loss.backward();
      adam.step();
      NoGrad no_grad;
      safe.push_back(mean_iou(logits, target));  // the measurement: the same IoU, in the training stream's order
      metrics.wait(Stream::current(device).record());
      StreamGuard on_metrics(metrics);  // the IoU overlaps the next step
      logged.push_back(mean_iou(logits, target));
    }  // logits and target are freed here, on the training stream, with the metrics stream's work still queued
  }

  // How many logged IoUs differ from the ones computed in order.
  synchronize(device);
  const std::vector<float> got = data::stack(logged).to(cpu_device()).to_vector<float>();
  const std::vector<float> want = data::stack(safe).to(cpu_device()).to_vector<float>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += !(std::fabs(got[i] - want[i]) <= 1e-5f);
  std::printf("last logged IoU %.3f (in order: %.3f)\n", got.back(), want.back());
  if (wrong > 0)
    std::printf("symptom: %zu of %zu logged IoUs were computed from memory the next step had reused\n", wrong,
                got.size());
  else std::printf("all %zu logged IoUs match the ones computed in order\n", got.size());
}
