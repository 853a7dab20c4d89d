// Tensor basics: creation, dtypes, views, broadcasting, reductions, random.
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace gdrt {
namespace {

using test::all_close;

TEST(Tensor, CreationFillsValues) {
  EXPECT_EQ(zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(ones({4}, TensorOptions{}.with_dtype(DType::i64)).to_vector<std::int64_t>(), std::vector<std::int64_t>(4, 1));
  EXPECT_EQ(full({2}, 2.5, TensorOptions{}.with_dtype(DType::f64)).to_vector<double>(), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(arange(0, 5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1, 2, 0.25).numel(), 4);
  EXPECT_THROW(arange(0, 1, 0), Error);
  Tensor t = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_DOUBLE_EQ(t.at({1, 2}), 6.0);
  EXPECT_THROW(from_vector<float>({1, 2, 3}, {2, 2}), Error);
  EXPECT_THROW(t.at({2, 0}), Error);
}

TEST(Tensor, MemoryAllocatedCountsLiveStorageOfItsDevice) {
  const std::size_t before = memory_allocated(cpu_device());
  {
    Tensor t = zeros({256});
    EXPECT_EQ(memory_allocated(cpu_device()), before + 256 * sizeof(float));
    Tensor view = t.reshape({16, 16});  // shares the storage
    EXPECT_EQ(memory_allocated(cpu_device()), before + 256 * sizeof(float));
    Tensor kept = t.to(DType::f64);
    EXPECT_EQ(memory_allocated(cpu_device()), before + 256 * (sizeof(float) + sizeof(double)));
  }
  EXPECT_EQ(memory_allocated(cpu_device()), before);
  EXPECT_EQ(memory_allocated(Device(DeviceKind::emu, 7)), 0u);  // no tensor was made there
}

TEST(Tensor, DtypeConversionsRoundTrip) {
  Tensor t = from_vector<float>({-1.5f, 0.0f, 2.25f, 65504.0f}, {4});
  EXPECT_EQ(t.to(DType::f16).to(DType::f32).to_vector<float>(), t.to_vector<float>());
  EXPECT_EQ(t.to(DType::i32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-1, 0, 2, 65504}));
  EXPECT_EQ(t.to(DType::boolean).to(DType::u8).to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1, 1}));
  EXPECT_FLOAT_EQ(half_to_float(float_to_half(0.1f)), 0.0999755859375f);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);  // overflow -> inf
  EXPECT_EQ(itemsize(DType::f16), 2u);
  EXPECT_EQ(dtype_from_safetensors("BOOL"), DType::boolean);
  EXPECT_THROW(dtype_from_safetensors("BF16"), Error);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = arange(0, 24).reshape({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_DOUBLE_EQ(p.at({3, 1, 2}), t.at({1, 2, 3}));
  Tensor s = t.slice(2, 1, 4, 2);
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.contiguous().to_vector<float>()[0], 1.0f);
  EXPECT_DOUBLE_EQ(s.at({1, 2, 1}), 23.0);
  {
    NoGrad ng;
    Tensor view = t.select(0, 1);
    view.fill_(7.0);
  }
  EXPECT_DOUBLE_EQ(t.at({1, 0, 0}), 7.0);
  EXPECT_DOUBLE_EQ(t.at({0, 0, 1}), 1.0);
  EXPECT_EQ(t.reshape({-1, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(t.unsqueeze(1).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(t.unsqueeze(1).squeeze(1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.permute({2, 0, 1}).reshape({4, 6}).contiguous().at({1, 0}), 1.0);
}

TEST(Tensor, BroadcastingArithmetic) {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector<float>({10, 20, 30}, {3});
  EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor c = from_vector<float>({2, 3}, {2, 1});
  EXPECT_EQ((a * c).to_vector<float>(), (std::vector<float>{2, 4, 6, 12, 15, 18}));
  EXPECT_EQ((a - 1.0).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ((2.0 - a).to_vector<float>()[0], 1.0f);
  EXPECT_EQ(gt(a, 3.0).to(DType::u8).to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 0, 0, 1, 1, 1}));
  Tensor i = from_vector<std::int64_t>({1, 2}, {2});
  EXPECT_EQ(add(i, i).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 4}));
}

TEST(Tensor, Reductions) {
  Tensor a = from_vector<float>({1, 5, 3, 4, 2, 6}, {2, 3});
  EXPECT_FLOAT_EQ(sum(a).item(), 21.0f);
  EXPECT_EQ(sum(a, {0}).to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(sum(a, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_FLOAT_EQ(mean(a).item(), 3.5f);
  EXPECT_EQ(amax(a, {1}).to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(amin(a, {0}).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(argmax(a, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(argmax(a, 0).dtype(), DType::i64);
  EXPECT_THROW(sum(a, {2}), Error);
  // Large sum goes through the parallel path and stays accurate.
  EXPECT_NEAR(sum(ones({1 << 18})).item(), 262144.0, 1e-3);
}

TEST(Tensor, MatmulAndCat) {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  EXPECT_EQ(matmul(a, b).to_vector<float>(), (std::vector<float>{4, 5, 10, 11}));
  EXPECT_EQ(matmul(a.transpose(0, 1), a).shape(), (Shape{3, 3}));
  Tensor c = cat({a, a * 2.0}, 1);
  EXPECT_EQ(c.shape(), (Shape{2, 6}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 2, 4, 6, 4, 5, 6, 8, 10, 12}));
  Tensor oh = one_hot(from_vector<std::int64_t>({2, 0}, {2}), 3, 1);
  EXPECT_EQ(oh.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0}));
}

TEST(Tensor, SeededRandomIsReproducible) {
  Generator g1(42), g2(42), g3(43);
  Tensor a = randn({1000}, g1), b = randn({1000}, g2), c = randn({1000}, g3);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
  EXPECT_NEAR(mean(a).item(), 0.0, 0.1);
  EXPECT_NEAR(mean(square(a)).item(), 1.0, 0.15);
  Tensor u = rand({1000}, g1);
  EXPECT_GE(amin(u).item(), 0.0);
  EXPECT_LT(amax(u).item(), 1.0);
  EXPECT_EQ(g1.offset(), 2000u);
  Generator d(7);
  Tensor x = ones({10000});
  Tensor y = dropout(x, 0.25, true, d);
  const double kept = mean(gt(y, 0.0).to(DType::f32)).item();
  EXPECT_NEAR(kept, 0.75, 0.03);
  EXPECT_NEAR(amax(y).item(), 1.0 / 0.75, 1e-5);
  EXPECT_EQ(dropout(x, 0.25, false, d).to_vector<float>(), x.to_vector<float>());
}

TEST(Device, ParseAndPreference) {
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceKind::cuda, 1}));
  EXPECT_EQ(Device::parse("emu"), (Device{DeviceKind::emu, 0}));
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_THROW(Device::parse("gpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("cpu:1"), Error);
  EXPECT_EQ(preferred_device("emu:2"), (Device{DeviceKind::emu, 2}));
  ::setenv("GDRT_DEVICE", "cuda:3", 1);
  EXPECT_EQ(preferred_device(), (Device{DeviceKind::cuda, 3}));
  ::setenv("GDRT_DEVICE", "tpu", 1);
  EXPECT_THROW(preferred_device(), Error);
  ::unsetenv("GDRT_DEVICE");
}

}  // namespace
TEST(Activations, SiluIsXTimesItsSigmoid) {
  const std::vector<double> xs{-30.0, -3.0, -1.0, -0.0, 0.5, 2.0, 20.0};
  const Tensor x = from_vector<double>(xs, {7}, TensorOptions{}.with_dtype(DType::f64));
  const std::vector<double> y = silu(x).to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_DOUBLE_EQ(y[i], xs[i] * (1.0 / (1.0 + std::exp(-xs[i])))) << xs[i];
  const std::vector<float> yf = silu(from_vector<float>({-1.0f, 1.0f}, {2})).to_vector<float>();
  EXPECT_FLOAT_EQ(yf[0], -0.26894142f);
  EXPECT_FLOAT_EQ(yf[1], 0.7310586f);
}

}  // namespace gdrt
