// The kernels of gdrt/kernel_op.h launched directly through Backend::launch
// on each accelerator device and on cpu, for the variants no op in ops.h
// reaches (reciprocal, le, ne, matmul with transposed operands or
// accumulating into C) and every other unary/binary code and dtype, so a
// backend's dispatch is checked case by case. device_ops_test covers the
// kernels through the ops.
#include <gtest/gtest.h>

#include <string>

#include "device_compare.h"

namespace gdrt {
namespace {

class DeviceKernel : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (auto why = test::device_unavailable(GetParam())) GTEST_SKIP() << *why;
  }
};

// Queues `op` on the device's current stream, where the ops would queue it.
void run(const Device& device, KernelOp op) { backend(device).launch(op, Stream::current(device).id(), 0); }

bool needs_positive(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::log1p || op == UnaryOp::sqrt || op == UnaryOp::rsqrt || op == UnaryOp::reciprocal;
}

TEST_P(DeviceKernel, EveryUnaryCodeAndFloatDtype) {
  const Device device = GetParam();
  for (DType dtype : {DType::f32, DType::f64})
    for (int code = 0; code <= static_cast<int>(kLastUnaryOp); ++code) {
      const auto op = static_cast<UnaryOp>(code);
      Generator g(static_cast<std::uint64_t>(code));
      const auto o = TensorOptions{}.with_dtype(dtype);
      const Tensor in = needs_positive(op) ? uniform({5, 7}, 0.25, 2.0, g, o) : randn({5, 7}, g, o);
      auto apply = [&](const Device& d) {
        const Tensor x = in.to(d), y = empty({7, 5}, o.with_device(d));
        // A transposed input: the kernel must follow strides.
        run(d, ops::Unary{op, y.kernel_view(), x.transpose(0, 1).kernel_view(), 0.1});
        return y;
      };
      EXPECT_TRUE(test::matches_cpu(apply(device), apply(cpu_device()), device, test::kTight))
          << "unary code " << code << " " << dtype_name(dtype);
    }
}

TEST_P(DeviceKernel, EveryBinaryCodeWithBroadcastOperands) {
  const Device device = GetParam();
  for (DType dtype : {DType::f32, DType::f64})
    for (int code = 0; code <= static_cast<int>(kLastBinaryOp); ++code) {
      const auto op = static_cast<BinaryOp>(code);
      const bool compare = op >= BinaryOp::gt;
      Generator g(static_cast<std::uint64_t>(100 + code));
      const auto o = TensorOptions{}.with_dtype(dtype);
      // Small integers, so comparisons see ties; a positive base for pow.
      const Tensor a = op == BinaryOp::pow ? uniform({4, 6}, 0.5, 2.0, g, o) : floor(mul(randn({4, 6}, g, o), 2.0));
      const Tensor b = op == BinaryOp::div ? uniform({6}, 0.5, 2.0, g, o) : floor(mul(randn({6}, g, o), 2.0));
      auto apply = [&](const Device& d) {
        const Tensor x = a.to(d), y = b.to(d).expand({4, 6});
        const Tensor out = empty({4, 6}, o.with_device(d).with_dtype(compare ? DType::boolean : dtype));
        run(d, ops::Binary{op, out.kernel_view(), x.kernel_view(), y.kernel_view()});
        return out;
      };
      EXPECT_TRUE(test::matches_cpu(apply(device), apply(cpu_device()), device, compare ? test::kExact : test::kTight))
          << "binary code " << code << " " << dtype_name(dtype);
    }
}

TEST_P(DeviceKernel, MatmulTransposedOperandsAndAccumulation) {
  const Device device = GetParam();
  const std::int64_t batch = 2, m = 3, n = 4, k = 5;
  for (DType dtype : {DType::f32, DType::f64})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (double beta : {0.0, 1.0}) {
          Generator g(7);
          const auto o = TensorOptions{}.with_dtype(dtype);
          const Tensor a = randn(ta ? Shape{batch, k, m} : Shape{batch, m, k}, g, o);
          const Tensor b = randn(tb ? Shape{batch, n, k} : Shape{batch, k, n}, g, o);
          const Tensor c0 = randn({batch, m, n}, g, o);
          auto apply = [&](const Device& d) {
            const Tensor x = a.to(d), y = b.to(d);
            // A fresh copy of C on the device: beta 1 adds to it in place.
            const Tensor c = c0.to(d).clone();
            run(d, ops::Matmul{dtype, ta, tb, batch, m, n, k, x.data_ptr(), y.data_ptr(), c.data_ptr(), beta});
            return c;
          };
          EXPECT_TRUE(test::matches_cpu(apply(device), apply(cpu_device()), device, test::kLoose))
              << dtype_name(dtype) << " trans_a " << ta << " trans_b " << tb << " beta " << beta;
        }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceKernel, ::testing::ValuesIn(test::accelerator_devices()),
                         [](const auto& info) { return test::device_label(info.param); });

}  // namespace
}  // namespace gdrt
