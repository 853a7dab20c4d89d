// The CPU kernels' fast paths (row-wise reductions, 2x2 pooling, one-pass
// batch statistics) against plain double-precision loops written here, on
// shapes and values chosen to reach the paths: strided views, ties, NaNs,
// a large mean next to a small variance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "test_support.h"

namespace gdrt {
namespace {

// x[n][c][h][w] as a flat NCHW vector of deterministic, non-trivial values.
std::vector<float> pattern(std::int64_t count, float offset = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = offset + std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  return v;
}

TEST(CpuFastPaths, SumOverBatchAndPlaneMatchesLoops) {
  const std::int64_t n = 3, c = 5, h = 7, w = 9;
  const auto data = pattern(n * c * h * w);
  Tensor x = from_vector<float>(data, {n, c, h, w});
  std::vector<float> expect(static_cast<std::size_t>(c));
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < h * w; ++k) s += data[static_cast<std::size_t>((i * c + ch) * h * w + k)];
    expect[static_cast<std::size_t>(ch)] = static_cast<float>(s);
  }
  Tensor want = from_vector<float>(expect, {c});
  EXPECT_TRUE(test::all_close(sum(x, {0, 2, 3}), want, 1e-4));
  // The same sums through a permuted (non-contiguous) view: [h, c, w, n].
  EXPECT_TRUE(test::all_close(sum(x.permute({2, 1, 3, 0}), {0, 2, 3}), want, 1e-4));
  // One output over everything, split across threads.
  Tensor big = from_vector<float>(pattern(300000), {300, 1000});
  double total = 0;
  for (float v : pattern(300000)) total += v;
  EXPECT_NEAR(sum(big).item(), total, 1e-3);
}

TEST(CpuFastPaths, MaxAndArgmaxOverMergedDimsKeepFirstTieAndNaN) {
  Tensor x = from_vector<float>({1, 7, 7, 2, 0, -1, 3, 3, 5, 5, 1, 0}, {2, 2, 3});
  // Reduce dims 1 and 2 (contiguous, merged into one row of 6).
  EXPECT_EQ(amax(x, {1, 2}).to_vector<float>(), (std::vector<float>{7, 5}));
  EXPECT_EQ(argmax(x.reshape({2, 6}), 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = from_vector<float>({1, nan, 3, 0}, {1, 4});
  EXPECT_TRUE(std::isnan(amax(y, {1}).item()));
  // Strided rows: reduce over dim 0 of a [3, 2] view whose dim 0 has stride 1.
  Tensor t = from_vector<float>({1, 4, 2, 5, 3, 6}, {2, 3}).transpose(0, 1);
  EXPECT_EQ(sum(t, {0}).to_vector<float>(), (std::vector<float>{7, 14}));  // t = [[1, 5], [4, 3], [2, 6]]
  EXPECT_EQ(amax(t, {0}).to_vector<float>(), (std::vector<float>{4, 6}));
}

TEST(CpuFastPaths, MaxPool2x2PicksFirstOfTiesPropagatesNaNAndRoutesGradient) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // One 4x5 plane (odd width: the last column is never pooled).
  Tensor x = from_vector<float>({2, 2, 0, 1, 9,
                                 1, 2, nan, 0, 9,
                                 -1, -3, 4, 8, 9,
                                 -2, -1, 8, 4, 9}, {1, 1, 4, 5}).requires_grad_();
  Tensor y = max_pool2d(x, 2);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  const auto v = y.to_vector<float>();
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -1.0f);
  EXPECT_EQ(v[3], 8.0f);
  sum(mul(y, from_vector<float>({10, 20, 30, 40}, {1, 1, 2, 2}))).backward();
  const std::vector<float> grad = x.grad().to_vector<float>();
  std::vector<float> expect(20, 0.0f);
  expect[0] = 10;   // the first of the tied 2s
  expect[7] = 20;   // the NaN
  expect[10] = 30;  // -1 in row 2 (row 3 column 1 is -1 too: the first wins)
  expect[13] = 40;  // the first 8 (row 2), not the one below-left
  EXPECT_EQ(grad, expect);
}

TEST(CpuFastPaths, BatchNormStatisticsSurviveALargeMean) {
  const std::int64_t n = 4, c = 3, hw = 50;
  const auto data = pattern(n * c * hw, 1000.0f);
  Tensor x = from_vector<float>(data, {n, c, 5, 10});
  Tensor rm = zeros({c}), rv = ones({c});
  Tensor y = batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.1, 1e-5);
  std::vector<float> expect(data.size()), want_rv(static_cast<std::size_t>(c));
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double s = 0, ss = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < hw; ++k) s += data[static_cast<std::size_t>((i * c + ch) * hw + k)];
    const double mean = s / static_cast<double>(n * hw);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < hw; ++k) {
        const double d = data[static_cast<std::size_t>((i * c + ch) * hw + k)] - mean;
        ss += d * d;
      }
    const double invstd = 1.0 / std::sqrt(ss / static_cast<double>(n * hw) + 1e-5);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < hw; ++k) {
        const auto at = static_cast<std::size_t>((i * c + ch) * hw + k);
        expect[at] = static_cast<float>((data[at] - mean) * invstd);
      }
    want_rv[static_cast<std::size_t>(ch)] = static_cast<float>(0.9 + 0.1 * ss / static_cast<double>(n * hw - 1));
  }
  EXPECT_TRUE(test::all_close(y, from_vector<float>(expect, {n, c, 5, 10}), 2e-3));
  EXPECT_TRUE(test::all_close(rv, from_vector<float>(want_rv, {c}), 1e-3));
}

TEST(CpuFastPaths, ReluGradientIsTheThresholdedUpstreamGradient) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = from_vector<float>({-2, -0.0f, 0, 0.5f, 3, -1, 2, 4}, {2, 4}).requires_grad_();
  Tensor upstream = from_vector<float>({1, 2, 3, 4, 5, nan, 7, 8}, {2, 4});
  sum(mul(relu(x), upstream)).backward();
  // Zero where the output is not positive, even for a NaN upstream (as PyTorch's threshold_backward).
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 0, 4, 5, 0, 7, 8}));
  // A non-contiguous upstream gradient (through a transpose) lands on the right elements.
  Tensor a = from_vector<float>({1, -1, 2, -2, 3, -3}, {2, 3}).requires_grad_();
  Tensor w = from_vector<float>({10, 20, 30, 40, 50, 60}, {3, 2});
  sum(mul(relu(a).transpose(0, 1), w)).backward();
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{10, 0, 50, 0, 40, 0}));
}

TEST(CpuFastPaths, AdamMatchesItsUpdateRuleWrittenOut) {
  const std::int64_t n = 40000;  // several chunks, so the update runs in parallel
  std::vector<float> p0 = pattern(n), grads[3] = {pattern(n, 0.5f), pattern(n, -0.25f), pattern(n, 0.1f)};
  Tensor p = from_vector<float>(p0, {200, 200}).requires_grad_();
  optim::AdamOptions o;
  o.lr = 0.01;
  optim::Adam adam({{"w", p}}, o);
  std::vector<double> pr(p0.begin(), p0.end()), m(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n));
  for (int t = 1; t <= 3; ++t) {
    adam.zero_grad();
    sum(mul(p, from_vector<float>(grads[t - 1], {200, 200}))).backward();  // grad = grads[t-1]
    adam.step();
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    for (std::size_t i = 0; i < pr.size(); ++i) {
      const double g = grads[t - 1][i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      pr[i] -= o.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + o.eps);
    }
  }
  std::vector<float> want(pr.begin(), pr.end()), want_v(v.begin(), v.end());
  EXPECT_TRUE(test::all_close(p.detach(), from_vector<float>(want, {200, 200}), 1e-5));
  EXPECT_TRUE(test::all_close(adam.state_dict().at("w.exp_avg_sq"), from_vector<float>(want_v, {200, 200}), 1e-6));
  EXPECT_EQ(adam.state_dict().at("step").item(), 3.0);
}

// Convolutions run per image on several threads (weights reordered once and
// shared, per-image weight gradients summed) and whole-batch on one thread;
// both must give the same numbers, for conv2d with bias and conv_transpose2d.
TEST(CpuFastPaths, ConvolutionGradientsAgreeAcrossThreadCounts) {
  struct Result {
    Tensor y, dx, dw, db, ty, tdw;
  };
  auto run = [](int threads) {
    set_num_threads(threads);
    Generator gen(7);
    Tensor x = randn({3, 5, 9, 11}, gen).requires_grad_();
    Tensor w = randn({6, 5, 3, 3}, gen).requires_grad_();
    Tensor b = randn({6}, gen).requires_grad_();
    Tensor tw = randn({6, 4, 2, 2}, gen).requires_grad_();
    Tensor y = conv2d(x, w, b, Conv2dOptions{1, 1, 1});
    Tensor ty = conv_transpose2d(y, tw, Tensor(), Conv2dOptions{2, 0, 1});
    Tensor up = randn(ty.shape(), gen);
    sum(mul(ty, up)).backward();
    return Result{y.detach(), x.grad(), w.grad(), b.grad(), ty.detach(), tw.grad()};
  };
  const Result one = run(1), two = run(2);
  set_num_threads(2);
  EXPECT_TRUE(test::all_close(two.y, one.y, 1e-4, 1e-5));
  EXPECT_TRUE(test::all_close(two.ty, one.ty, 1e-4, 1e-5));
  EXPECT_TRUE(test::all_close(two.dx, one.dx, 1e-4, 1e-4));
  EXPECT_TRUE(test::all_close(two.dw, one.dw, 1e-3, 1e-4));
  EXPECT_TRUE(test::all_close(two.db, one.db, 1e-3, 1e-4));
  EXPECT_TRUE(test::all_close(two.tdw, one.tdw, 1e-3, 1e-4));
}

// set_num_threads reaches the pool the cpu kernels run on (through the cpu
// backend's registration: the core names no backend); 0 means one thread
// per hardware thread.
TEST(CpuFastPaths, SetNumThreadsSizesTheKernelPool) {
  const int before = num_threads();
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  set_num_threads(0);
  EXPECT_EQ(num_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  set_num_threads(before);
}

// The pool belongs to the kernels this build compiled, not to the factory:
// replacing the cpu backend's factory leaves set_num_threads reaching it.
TEST(CpuFastPaths, SetNumThreadsStillSizesThePoolAfterTheCpuFactoryIsReplaced) {
  // A child that runs the test afresh, not a fork whose copy of the pool
  // names worker threads it does not have.
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        register_backend(DeviceKind::cpu, [](int) -> std::unique_ptr<Backend> { throw Error("stand-in"); });
        set_num_threads(5);
        std::_Exit(num_threads() == 5 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

// batch_norm_relu (one forward pass, the relu mask applied inside the batch
// norm backward) against relu(batch_norm(...)), in training and eval mode.
TEST(CpuFastPaths, FusedBatchNormReluEqualsTheComposition) {
  for (bool training : {true, false}) {
    auto run = [&](bool fused) {
      Generator gen(3);
      Tensor x = add(randn({2, 4, 6, 5}, gen), 0.3).requires_grad_();
      Tensor w = randn({4}, gen).requires_grad_();
      Tensor b = randn({4}, gen).requires_grad_();
      Tensor rm = randn({4}, gen), rv = add(rand({4}, gen), 0.5);
      Tensor up = randn({2, 4, 6, 5}, gen);
      Tensor y = fused ? batch_norm_relu(x, w, b, rm, rv, training, 0.1, 1e-5)
                       : relu(batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5));
      sum(mul(y, up)).backward();
      return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad(), rm, rv};
    };
    const auto fused = run(true), plain = run(false);
    const char* names[] = {"output", "dx", "dw", "db", "running_mean", "running_var"};
    for (std::size_t i = 0; i < fused.size(); ++i)
      EXPECT_TRUE(test::all_close(fused[i], plain[i], 1e-5, 1e-5)) << names[i] << (training ? " (train)" : " (eval)");
    // The relu really happened: some outputs are zero and none negative.
    EXPECT_EQ(amin(fused[0]).item(), 0.0);
  }
}

// nn::Sequential runs BatchNorm2d + ReLU fused; the module keeps its
// parameter names, and the result equals running the layers one by one.
TEST(CpuFastPaths, SequentialFusesBatchNormAndRelu) {
  auto seq = std::make_shared<nn::Sequential>();
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  seq->add(bn);
  seq->add(std::make_shared<nn::ReLU>());
  Generator gen(11);
  Tensor x = randn({2, 3, 4, 4}, gen);
  NoGrad ng;
  Tensor fused = seq->forward(x);
  EXPECT_EQ(bn->num_batches_tracked.item(), 1.0);
  Tensor rm = bn->running_mean.clone(), rv = bn->running_var.clone();
  bn->running_mean.copy_(zeros({3}));
  bn->running_var.copy_(ones({3}));
  Tensor plain = relu(bn->forward(x));
  EXPECT_TRUE(test::all_close(fused, plain, 1e-6));
  EXPECT_TRUE(test::all_close(rm, bn->running_mean, 1e-7));
  EXPECT_TRUE(test::all_close(rv, bn->running_var, 1e-7));
  std::vector<std::string> names;
  for (const auto& [name, t] : seq->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias"}));
}

}  // namespace
}  // namespace gdrt
