// Autograd engine behaviour: accumulation, no_grad, errors, and a numeric
// gradient check of composite expressions in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "test_support.h"

namespace gdrt {
namespace {

using test::all_close;

TEST(Autograd, ChainRuleAndAccumulation) {
  Tensor x = from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  Tensor y = sum(mul(x, x));
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));
  sum(mul(x, 3.0)).backward();  // a second graph accumulates into .grad
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 7, 9}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SharedSubexpressionsSumTheirGradients) {
  Tensor x = from_vector<float>({2}, {1}).requires_grad_();
  Tensor a = exp(x);
  Tensor y = sum(add(mul(a, a), a));  // e^{2x} + e^x -> 2e^{2x} + e^x
  y.backward();
  const double e = std::exp(2.0);
  EXPECT_NEAR(x.grad().item(), 2 * e * e + e, 1e-3);
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y;
  {
    NoGrad ng;
    y = mul(x, 2.0);
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(sum(y).backward(), Error);
  EXPECT_TRUE(mul(x, 2.0).requires_grad());
  EXPECT_FALSE(mul(x.detach(), 2.0).requires_grad());
}

TEST(Autograd, BackwardTwiceThroughFreedGraphFailsClearly) {
  Tensor x = ones({3}).requires_grad_();
  Tensor loss = sum(sigmoid(x));
  loss.backward();
  try {
    loss.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
  Tensor loss2 = sum(sigmoid(x));
  x.zero_grad();
  loss2.backward({}, true);
  loss2.backward();  // the first kept the graph
  EXPECT_TRUE(all_close(x.grad(), mul(mul(sigmoid(x.detach()), rsub(1.0, sigmoid(x.detach()))), 2.0), 1e-6));
}

TEST(Autograd, NonDifferentiableOpNamesItself) {
  Tensor x = from_vector<float>({0.4f, 1.6f}, {2}).requires_grad_();
  Tensor y = sum(mul(round(x), x));
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("`round`"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("detach"), std::string::npos);
  }
  Tensor z = sum(mul(round(x.detach()), x));  // the fix the message suggests
  z.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 2}));
}

TEST(Autograd, InPlaceOnLeafRequiringGradIsRefused) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_THROW(w.add_(ones({2})), Error);
  NoGrad ng;
  w.add_(ones({2}));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(Autograd, BackwardNeedsScalarOrGradient) {
  Tensor x = ones({3}).requires_grad_();
  Tensor y = mul(x, 2.0);
  EXPECT_THROW(y.backward(), Error);
  EXPECT_THROW(y.backward(ones({2})), Error);
  y.backward(ones({3}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_THROW(ones({2}, TensorOptions{}.with_dtype(DType::i64)).requires_grad_(), Error);
}

// Central differences in float64 against the analytic gradient.
void gradcheck(const std::function<Tensor(const Tensor&)>& f, Tensor x) {
  AllowFloat64Promotion allow;
  x = x.to(DType::f64).detach().requires_grad_();
  f(x).backward();
  std::vector<double> analytic = x.grad().to_vector<double>();
  std::vector<double> values = x.detach().to_vector<double>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto eval = [&](double delta) {
      std::vector<double> v = values;
      v[i] += delta;
      NoGrad ng;
      return f(from_vector<double>(v, x.shape(), TensorOptions{}.with_dtype(DType::f64))).item();
    };
    const double numeric = (eval(1e-6) - eval(-1e-6)) / 2e-6;
    EXPECT_NEAR(analytic[i], numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << "element " << i;
  }
}

TEST(Autograd, NumericGradientsOfCompositeExpressions) {
  Generator g(3);
  gradcheck([](const Tensor& x) { return sum(mul(tanh(x), sigmoid(x))); }, randn({5}, g));
  gradcheck([](const Tensor& x) { return sum(mul(silu(x), x)); }, randn({5}, g));
  gradcheck([](const Tensor& x) { return sum(log_softmax(x.reshape({2, 3}), 1).select(1, 0)); }, randn({6}, g));
  gradcheck([](const Tensor& x) { return sum(square(div(x, add(abs(x), 1.0)))); }, randn({4}, g));
  gradcheck([](const Tensor& x) { return sum(matmul(x.reshape({2, 2}), x.reshape({2, 2}).transpose(0, 1))); },
            randn({4}, g));
  gradcheck([](const Tensor& x) { return mean(amax(x.reshape({2, 3}), {1})); }, randn({6}, g));
  gradcheck([](const Tensor& x) { return sum(leaky_relu(x, 0.2) * x.slice(0, 0, 4).expand({4})); }, randn({4}, g));
}

}  // namespace
}  // namespace gdrt
