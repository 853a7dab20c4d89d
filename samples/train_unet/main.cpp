// train_unet: trains a small UNet on a synthetic segmentation set it
// generates (bright discs and rectangles on noisy backgrounds), prints the
// loss per epoch and the IoU on held-out images, and saves a checkpoint.
//   train_unet [--device cpu] [--epochs 6] [--size 32] [--train 256] [--base 8] ...
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "gdrt/gdrt.h"
#include "synthetic_shapes.h"

namespace {

using namespace gdrt;

struct Scores {
  double loss = 0, iou = 0;
};

Scores evaluate(nn::UNet& model, data::DataLoader& loader) {
  model.eval();
  NoGrad ng;
  // Loss, intersection and union summed on the device, and brought home in
  // one copy at the end rather than read back every batch.
  Tensor totals;
  std::int64_t batches = 0;
  loader.start_epoch(0);
  while (auto b = loader.next()) {
    Tensor logits = model(b->input);
    Tensor loss = binary_cross_entropy_with_logits(logits, b->target);
    Tensor pred = gt(logits, 0.0).to(DType::f32);
    Tensor i = sum(mul(pred, b->target)), u = sum(sub(add(pred, b->target), mul(pred, b->target)));
    Tensor batch = cat({loss.reshape({1}), i.reshape({1}), u.reshape({1})}, 0);
    totals = totals.defined() ? add(totals, batch) : batch;
    ++batches;
  }
  model.train();
  if (!totals.defined()) return {0.0, 1.0};
  const std::vector<float> sums = totals.to_vector<float>();
  return {sums[0] / static_cast<double>(batches), sums[2] > 0 ? sums[1] / sums[2] : 1.0};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a UNet on synthetic shapes with gdrt"};
  std::string device_name, checkpoint = "train_unet.safetensors";
  int epochs = 6, threads = 0, workers = 2;
  std::int64_t size = 32, train_count = 256, val_count = 64, base = 8, depth = 3, batch = 16;
  double lr = 3e-3;
  std::uint64_t seed = 1;
  app.add_option("--device", device_name, "cpu, emu or cuda[:N] (default: GDRT_DEVICE, else a GPU, else cpu)");
  app.add_option("--epochs", epochs)->check(CLI::PositiveNumber);
  app.add_option("--size", size, "image side, divisible by 2^depth")->check(CLI::PositiveNumber);
  app.add_option("--train", train_count)->check(CLI::PositiveNumber);
  app.add_option("--val", val_count)->check(CLI::PositiveNumber);
  app.add_option("--base", base, "channels of the first level")->check(CLI::PositiveNumber);
  app.add_option("--depth", depth)->check(CLI::Range(1, 6));
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--lr", lr)->check(CLI::PositiveNumber);
  app.add_option("--seed", seed);
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  app.add_option("--workers", workers, "data loader threads")->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint", checkpoint, "where to save the trained weights (safetensors; empty: don't)");
  CLI11_PARSE(app, argc, argv);
  try {
    set_num_threads(threads);
    const Device device = preferred_device(device_name);
    nn::UNet model({3, 1, base, depth, true, seed});
    model.to(device);
    optim::Adam adam(model.named_parameters(), {lr});
    auto to_device = [device](data::Batch b) {
      b.input = b.input.to(device);
      b.target = b.target.to(device);
      return b;
    };
    data::LoaderOptions train_opts;
    train_opts.batch_size = batch;
    train_opts.shuffle = true;
    train_opts.seed = seed;
    train_opts.workers = workers;
    train_opts.transfer = to_device;
    // Batches in pinned memory, as PyTorch's DataLoader(pin_memory=True): a
    // copy from pageable memory is staged by the driver (GD009).
    train_opts.pin_memory = !device.is_cpu();
    train_opts.pin_for = device;
    data::LoaderOptions val_opts = train_opts;
    val_opts.shuffle = false;
    data::DataLoader train(std::make_shared<samples::SyntheticShapes>(train_count, size, seed), train_opts);
    data::DataLoader val(std::make_shared<samples::SyntheticShapes>(val_count, size, seed + 7777), val_opts);
    std::printf("UNet(base %lld, depth %lld): %lld parameters on %s; %lld training images %lldx%lld\n",
                static_cast<long long>(base), static_cast<long long>(depth),
                static_cast<long long>(model.parameter_count()), device.str().c_str(),
                static_cast<long long>(train_count), static_cast<long long>(size), static_cast<long long>(size));
    const Scores before = evaluate(model, val);
    std::printf("before training: val loss %.4f, IoU %.3f\n", before.loss, before.iou);
    const auto start = std::chrono::steady_clock::now();
    Scores after = before;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      train.start_epoch(epoch);
      Tensor total;  // the epoch's loss, summed on the device: no read back per step
      std::int64_t steps = 0;
      while (auto b = train.next()) {
        TrainingStep step;  // marks the iteration in gpudiag's trace
        adam.zero_grad();
        Tensor logits = model(b->input);
        Tensor loss = add(binary_cross_entropy_with_logits(logits, b->target), dice_loss(logits, b->target));
        loss.backward();
        adam.step();
        total = total.defined() ? add(total, loss.detach()) : loss.detach();
        ++steps;
      }
      after = evaluate(model, val);
      const double train_loss = total.defined() ? total.to_vector<float>()[0] / static_cast<double>(steps) : 0.0;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d: train loss %.4f, val loss %.4f, val IoU %.3f (%.1fs)\n", epoch + 1, train_loss,
                  after.loss, after.iou, secs);
    }
    if (!checkpoint.empty()) {
      save_checkpoint(checkpoint, model, &adam);
      std::printf("saved %s\n", checkpoint.c_str());
    }
    return after.loss < before.loss ? 0 : 3;  // a run that did not learn is a failure
  } catch (const Error& e) {
    std::fprintf(stderr, "train_unet: %s\n", e.what());
    return 1;
  }
}
