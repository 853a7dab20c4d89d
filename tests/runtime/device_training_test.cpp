// Training on each accelerator device against cpu: Adam and AdamW steps
// with their state on the device, and a UNet trained for a few steps from
// the same seed, which must reach the same loss as on cpu (the devices'
// "done when"). Devices missing from the build or machine skip.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "device_compare.h"
#include "test_support.h"

namespace gdrt {
namespace {

class DeviceTraining : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (auto why = test::device_unavailable(GetParam())) GTEST_SKIP() << *why;
  }
};

// Parameters of several shapes, one transposed: Adam's fused kernel serves
// the contiguous ones, its op-by-op path the transposed one.
nn::NamedTensors make_params(Device device) {
  Generator g(21);
  nn::NamedTensors p = {{"conv.weight", randn({4, 3, 3, 3}, g)},
                        {"conv.bias", randn({4}, g)},
                        {"fc.weight", randn({5, 6}, g).transpose(0, 1)}};
  for (auto& [_, t] : p) {
    const bool transposed = !t.is_contiguous();
    t = t.to(device);
    if (transposed && t.is_contiguous()) t = t.transpose(0, 1).contiguous().transpose(0, 1);
    t = t.detach().requires_grad_();
  }
  return p;
}

void adam_matches(Device device, bool decoupled) {
  nn::NamedTensors cpu_p = make_params(cpu_device()), dev_p = make_params(device);
  const optim::AdamOptions o{.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.05};
  optim::Adam cpu_opt(cpu_p, o, decoupled), dev_opt(dev_p, o, decoupled);
  Generator g(8);
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < cpu_p.size(); ++i) {
      const Tensor grad = randn(cpu_p[i].second.shape(), g);
      cpu_p[i].second.set_grad(grad);
      dev_p[i].second.set_grad(grad.to(device));
    }
    cpu_opt.step();
    dev_opt.step();
  }
  for (std::size_t i = 0; i < cpu_p.size(); ++i)
    EXPECT_TRUE(test::matches_cpu(dev_p[i].second, cpu_p[i].second, device, test::kTight)) << cpu_p[i].first;
  const auto cpu_state = cpu_opt.state_dict(), dev_state = dev_opt.state_dict();
  ASSERT_EQ(cpu_state.size(), dev_state.size());
  for (const auto& [key, expected] : cpu_state) {
    const Tensor& actual = dev_state.at(key);
    if (key == "step") {
      EXPECT_TRUE(test::all_close(actual.to(cpu_device()), expected, 0.0)) << key;
      continue;
    }
    // The state lives beside its parameter, never copied back to the host.
    EXPECT_TRUE(test::matches_cpu(actual, expected, device, test::kTight)) << key;
  }
}

TEST_P(DeviceTraining, AdamStepsMatchCpu) { adam_matches(GetParam(), false); }
TEST_P(DeviceTraining, AdamWStepsMatchCpu) { adam_matches(GetParam(), true); }

// A UNet with BCE-with-logits plus dice and Adam, as samples/train_unet
// trains it, on one fixed batch: the loss of every step on the device stays
// within tolerance of cpu's, and training lowers it.
TEST_P(DeviceTraining, UNetReachesTheSameLossAsCpu) {
  const Device device = GetParam();
  const nn::UNetOptions options{.in_channels = 3, .classes = 1, .base = 4, .depth = 2, .batch_norm = true, .seed = 5};
  nn::UNet cpu_model(options), dev_model(options);
  dev_model.to(device);
  Generator g(17);
  const Tensor x = randn({2, 3, 16, 16}, g);
  const Tensor t = gt(rand({2, 1, 16, 16}, g), 0.5).to(DType::f32);
  const Tensor dx = x.to(device), dt = t.to(device);
  optim::Adam cpu_opt(cpu_model.named_parameters(), {.lr = 1e-2}), dev_opt(dev_model.named_parameters(), {.lr = 1e-2});
  auto step = [](nn::UNet& model, optim::Adam& opt, const Tensor& in, const Tensor& target) {
    opt.zero_grad();
    const Tensor logits = model(in);
    Tensor loss = add(binary_cross_entropy_with_logits(logits, target), dice_loss(logits, target));
    loss.backward();
    opt.step();
    return loss.detach().to(cpu_device()).item();
  };
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    const double expected = step(cpu_model, cpu_opt, x, t);
    const double actual = step(dev_model, dev_opt, dx, dt);
    EXPECT_NEAR(actual, expected, 1e-4 + 1e-3 * std::abs(expected)) << "step " << i;
    if (i == 0) first = actual;
    last = actual;
  }
  EXPECT_LT(last, first) << "the UNet did not learn on " << device.str();
  // The weights (and batch norm's running statistics) end where cpu's did.
  const auto cpu_state = cpu_model.state_dict(), dev_state = dev_model.state_dict();
  for (const auto& [key, expected] : cpu_state)
    EXPECT_TRUE(test::matches_cpu(dev_state.at(key), expected, device, test::kLoose)) << key;
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceTraining, ::testing::ValuesIn(test::accelerator_devices()),
                         [](const auto& info) { return test::device_label(info.param); });

}  // namespace
}  // namespace gdrt
