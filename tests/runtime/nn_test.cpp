// Modules, UNet and optimisers; the UNet trains two Adam steps exactly as
// PyTorch does from the same initial weights (golden/unet.safetensors).
#include <gtest/gtest.h>

#include "test_support.h"

namespace gdrt {
namespace {

const Tensor& U(const std::string& key) { return test::golden_tensor("unet.safetensors", key); }

std::map<std::string, Tensor> with_prefix(const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, t] : test::golden("unet.safetensors"))
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = t;
  return out;
}

TEST(UNet, ParameterCountMatchesTheCommonPyTorchUNet) {
  nn::UNet big({3, 1, 64, 4, true, 0});
  EXPECT_EQ(big.parameter_count(), 31037633);
  EXPECT_EQ(big.parameter_count(), static_cast<std::int64_t>(U("param_count.base64_depth4_bn").item()));
  nn::UNet small({3, 1, 16, 4, true, 0});
  EXPECT_EQ(small.parameter_count(), static_cast<std::int64_t>(U("param_count.base16_depth4_bn").item()));
}

TEST(UNet, StateDictKeysAndShapesEqualPyTorch) {
  nn::UNet model({3, 1, 4, 2, true, 0});
  auto ours = model.state_dict();
  auto theirs = with_prefix("init.");
  ASSERT_EQ(ours.size(), theirs.size());
  for (const auto& [k, t] : theirs) {
    ASSERT_TRUE(ours.count(k)) << "missing key " << k;
    EXPECT_EQ(ours[k].shape(), t.shape()) << k;
    EXPECT_EQ(ours[k].dtype(), t.dtype()) << k;
  }
  EXPECT_TRUE(ours.count("inc.double_conv.1.num_batches_tracked"));
  EXPECT_TRUE(ours.count("down2.maxpool_conv.1.double_conv.4.running_var"));
  EXPECT_TRUE(ours.count("up1.up.bias"));
  EXPECT_TRUE(ours.count("outc.conv.bias"));
  EXPECT_FALSE(ours.count("inc.double_conv.0.bias"));  // bias-free convs before batch norm
}

TEST(UNet, TwoAdamStepsMatchPyTorch) {
  nn::UNet model({3, 1, 4, 2, true, 0});
  model.load_state_dict(with_prefix("init."));
  optim::Adam adam(model.named_parameters(), {1e-2});
  model.train();
  for (int step = 1; step <= 2; ++step) {
    adam.zero_grad();
    Tensor loss = binary_cross_entropy_with_logits(model(U("x")), U("target"));
    EXPECT_NEAR(loss.item(), U("loss" + std::to_string(step)).item(), 2e-5) << "step " << step;
    loss.backward();
    if (step == 1) {
      for (const auto& [k, p] : model.named_parameters())
        EXPECT_TRUE(test::all_close(p.grad(), U("grad1." + k), 2e-5, 1e-3)) << k;
    }
    adam.step();
  }
  auto expected = with_prefix("step2.");
  for (const auto& [k, t] : model.state_dict())
    EXPECT_TRUE(test::all_close(t, expected.at(k), 2e-4, 1e-3)) << k;
  model.eval();
  NoGrad ng;
  EXPECT_TRUE(test::all_close(model(U("x")), U("eval_out"), 2e-4, 1e-3));
  EXPECT_EQ(adam.steps(), 2);
  EXPECT_EQ(adam.state_dict().count("outc.conv.weight.exp_avg_sq"), 1u);
}

TEST(UNet, RejectsInputsItCannotDownsample) {
  nn::UNet model({3, 1, 4, 2, true, 0});
  EXPECT_THROW(model(zeros({1, 3, 18, 16})), Error);
  EXPECT_THROW(model(zeros({1, 1, 16, 16})), Error);
}

TEST(Optim, SgdMomentumFollowsPyTorchsRule) {
  Tensor w = from_vector<float>({1.0f}, {1}).requires_grad_();
  optim::SGD sgd({{"w", w}}, {0.1, 0.9});
  std::vector<float> seen;
  for (int i = 0; i < 3; ++i) {
    sgd.zero_grad();
    sum(mul(w, 2.0)).backward();  // gradient 2 each step
    sgd.step();
    seen.push_back(w.to_vector<float>()[0]);
  }
  // buf: 2, 3.8, 5.42 -> w: 0.8, 0.42, -0.122
  EXPECT_NEAR(seen[0], 0.8f, 1e-6);
  EXPECT_NEAR(seen[1], 0.42f, 1e-6);
  EXPECT_NEAR(seen[2], -0.122f, 1e-6);
  EXPECT_NEAR(sgd.state_dict().at("w.momentum_buffer").item(), 5.42, 1e-5);
}

TEST(Optim, AdamWDecouplesWeightDecay) {
  Tensor a = from_vector<float>({1.0f}, {1}).requires_grad_(), b = a.detach().clone().requires_grad_();
  optim::AdamW adamw({{"a", a}}, {0.1, 0.9, 0.999, 1e-8, 0.5});
  optim::Adam adam({{"b", b}}, {0.1, 0.9, 0.999, 1e-8, 0.5});
  for (auto* t : {&a, &b}) sum(mul(*t, 3.0)).backward();
  adamw.step();
  adam.step();
  // AdamW: (1 - 0.1*0.5) * 1 - 0.1 = 0.85. Adam: g = 3.5, still a unit step: 0.9.
  EXPECT_NEAR(a.to_vector<float>()[0], 0.85f, 1e-5);
  EXPECT_NEAR(b.to_vector<float>()[0], 0.9f, 1e-5);
}

TEST(Module, TrainEvalAndBatchNormBuffers) {
  nn::BatchNorm2d bn(2);
  Generator g(1);
  Tensor x = randn({4, 2, 3, 3}, g);
  bn(x);
  bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item(), 2.0);
  EXPECT_NE(bn.running_mean.to_vector<float>(), (std::vector<float>{0, 0}));
  bn.eval();
  EXPECT_FALSE(bn.is_training());
  Tensor before = bn.running_mean.clone();
  bn(x);
  EXPECT_EQ(bn.running_mean.to_vector<float>(), before.to_vector<float>());
  EXPECT_EQ(bn.num_batches_tracked.item(), 2.0);
  EXPECT_THROW(bn(zeros({1, 3, 2, 2})), Error);
}

TEST(Module, LoadStateDictValidatesBeforeCopying) {
  nn::UNet model({3, 1, 4, 2, true, 0});
  auto good = with_prefix("init.");
  auto before = model.state_dict().at("inc.double_conv.0.weight").clone();
  auto bad_shape = good;
  bad_shape["outc.conv.weight"] = zeros({2, 4, 1, 1});
  try {
    model.load_state_dict(bad_shape);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outc.conv.weight"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[2, 4, 1, 1]"), std::string::npos);
  }
  EXPECT_TRUE(test::all_close(model.state_dict().at("inc.double_conv.0.weight"), before, 0));
  auto missing = good;
  missing.erase("up1.up.bias");
  EXPECT_THROW(model.load_state_dict(missing), Error);
  model.load_state_dict(missing, false);
  auto extra = good;
  extra["bogus"] = zeros({1});
  EXPECT_THROW(model.load_state_dict(extra), Error);
}

TEST(Module, MovesToAnotherDeviceAndBack) {
  Generator gen(5);
  nn::Conv2d conv(2, 3, 3, {1, 1, 1}, true, gen);
  conv.to(test::emu_device());
  EXPECT_EQ(conv.weight.device(), test::emu_device());
  EXPECT_TRUE(conv.weight.requires_grad());
  Tensor y = conv(ones({1, 2, 4, 4}).to(test::emu_device()));
  EXPECT_EQ(y.device(), test::emu_device());
  EXPECT_THROW(conv(ones({1, 2, 4, 4})), Error);  // GD001: input left on the cpu
  conv.to(cpu_device());
  EXPECT_EQ(conv.named_parameters().front().second.device(), cpu_device());
}

}  // namespace
}  // namespace gdrt
