// Every op's output and input gradients against PyTorch 1.13 (golden/ops.safetensors).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "test_support.h"

namespace gdrt {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Case {
  const char* name;
  Fn fn;
  double atol = 1e-5;
};

const Tensor& G(const std::string& key) { return test::golden_tensor("ops.safetensors", key); }

class GoldenOp : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenOp, MatchesPyTorch) {
  const Case& c = GetParam();
  const std::string n = c.name;
  std::vector<Tensor> inputs;
  const auto& all = test::golden("ops.safetensors");
  for (int i = 0; all.count(n + ".in." + std::to_string(i)); ++i) {
    Tensor t = G(n + ".in." + std::to_string(i)).clone();
    if (is_floating(t.dtype())) t.requires_grad_();
    inputs.push_back(t);
  }
  ASSERT_FALSE(inputs.empty()) << "no golden inputs for " << n;
  Tensor out = c.fn(inputs);
  EXPECT_TRUE(test::all_close(out, G(n + ".out"), c.atol, 1e-4)) << n << " forward";
  sum(mul(out, G(n + ".grad_out"))).backward();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string key = n + ".grad." + std::to_string(i);
    if (!all.count(key)) continue;
    EXPECT_TRUE(test::all_close(inputs[i].grad(), G(key), c.atol, 1e-4)) << n << " gradient of input " << i;
  }
}

Tensor bn_running_mean, bn_running_var;

const Case kCases[] = {
    {"add", [](auto& v) { return add(v[0], v[1]); }},
    {"sub", [](auto& v) { return sub(v[0], v[1]); }},
    {"mul", [](auto& v) { return mul(v[0], v[1]); }},
    {"div", [](auto& v) { return div(v[0], v[1]); }},
    {"maximum", [](auto& v) { return maximum(v[0], v[1]); }},
    {"minimum", [](auto& v) { return minimum(v[0], v[1]); }},
    {"pow3", [](auto& v) { return pow(v[0], 3.0); }},
    {"exp", [](auto& v) { return exp(v[0]); }},
    {"log", [](auto& v) { return log(v[0]); }},
    {"log1p", [](auto& v) { return log1p(v[0]); }},
    {"abs", [](auto& v) { return abs(v[0]); }},
    {"sqrt", [](auto& v) { return sqrt(v[0]); }},
    {"square", [](auto& v) { return square(v[0]); }},
    {"neg", [](auto& v) { return neg(v[0]); }},
    {"relu", [](auto& v) { return relu(v[0]); }},
    {"leaky_relu", [](auto& v) { return leaky_relu(v[0], 0.1); }},
    {"sigmoid", [](auto& v) { return sigmoid(v[0]); }},
    {"tanh", [](auto& v) { return tanh(v[0]); }},
    {"softmax", [](auto& v) { return softmax(v[0], 1); }},
    {"log_softmax", [](auto& v) { return log_softmax(v[0], 1); }},
    {"sum_dim", [](auto& v) { return sum(v[0], {1}); }},
    {"sum_keep", [](auto& v) { return sum(v[0], {0, 2}, true); }},
    {"mean_all", [](auto& v) { return mean(v[0]); }},
    {"amax", [](auto& v) { return amax(v[0], {2}); }},
    {"logsumexp", [](auto& v) { return logsumexp(v[0], 1); }},
    {"matmul", [](auto& v) { return matmul(v[0], v[1]); }},
    {"bmm", [](auto& v) { return matmul(v[0], v[1]); }},
    {"views", [](auto& v) { return mul(v[0].permute({0, 2, 1}).slice(1, 1, 3).reshape({-1}), 2.0); }},
    {"slice_step", [](auto& v) { return add(v[0].slice(1, 0, 7, 2), 1.0); }},
    {"cat", [](auto& v) { return cat({v[0], v[1]}, 1); }},
    {"conv_s2p1", [](auto& v) { return conv2d(v[0], v[1], v[2], {2, 1, 1}); }, 1e-4},
    {"conv_d2p2", [](auto& v) { return conv2d(v[0], v[1], {}, {1, 2, 2}); }, 1e-4},
    {"conv_1x1", [](auto& v) { return conv2d(v[0], v[1], v[2]); }, 1e-4},
    {"convT_k2s2", [](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {2, 0, 1}); }, 1e-4},
    {"convT_k3s2p1op1", [](auto& v) { return conv_transpose2d(v[0], v[1], {}, {2, 1, 1}, 1); }, 1e-4},
    {"maxpool_k2", [](auto& v) { return max_pool2d(v[0], 2); }},
    {"maxpool_k3s2p1", [](auto& v) { return max_pool2d(v[0], 3, 2, 1); }},
    {"bn_train",
     [](auto& v) {
       bn_running_mean = G("bn_train.running_mean.before").clone();
       bn_running_var = G("bn_train.running_var.before").clone();
       return batch_norm(v[0], v[1], v[2], bn_running_mean, bn_running_var, true, 0.1, 1e-5);
     },
     1e-4},
    {"bn_eval",
     [](auto& v) {
       return batch_norm(v[0], v[1], v[2], G("bn_train.running_mean.before"), G("bn_train.running_var.before"), false);
     },
     1e-4},
    {"bce_logits", [](auto& v) { return binary_cross_entropy_with_logits(v[0], v[1]); }},
    {"cross_entropy", [](auto& v) { return cross_entropy(v[0], G("cross_entropy.target")); }},
    {"dice", [](auto& v) { return dice_loss(v[0], v[1], 1.0); }},
    {"mse", [](auto& v) { return mse_loss(v[0], v[1]); }},
};

INSTANTIATE_TEST_SUITE_P(PyTorch, GoldenOp, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GoldenOpExtra, BatchNormUpdatesRunningStatsLikePyTorch) {
  Tensor rm = G("bn_train.running_mean.before").clone(), rv = G("bn_train.running_var.before").clone();
  batch_norm(G("bn_train.in.0"), G("bn_train.in.1"), G("bn_train.in.2"), rm, rv, true, 0.1, 1e-5);
  EXPECT_TRUE(test::all_close(rm, G("bn_train.running_mean.after"), 1e-6));
  EXPECT_TRUE(test::all_close(rv, G("bn_train.running_var.after"), 1e-6));
}

TEST(GoldenOpExtra, EveryGoldenCaseIsTested) {
  std::set<std::string> tested;
  for (const Case& c : kCases) tested.insert(c.name);
  for (const auto& [key, _] : test::golden("ops.safetensors")) {
    const auto dot = key.find(".out");
    if (dot != std::string::npos && dot + 4 == key.size()) {
      EXPECT_TRUE(tested.count(key.substr(0, dot))) << key;
    }
  }
}

}  // namespace
}  // namespace gdrt
