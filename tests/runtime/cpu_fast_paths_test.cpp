// The CPU kernels' fast paths (row-wise reductions, 2x2 pooling, one-pass
// batch statistics) against plain double-precision loops written here, on
// shapes and values chosen to reach the paths: strided views, ties, NaNs,
// a large mean next to a small variance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace gdrt
