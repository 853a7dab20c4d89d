// Errors that teach: GD001, GD002, GD005 and shape messages.
#include <gtest/gtest.h>

#include "test_support.h"

namespace gdrt {
namespace {

template <class F>
Error catch_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected gdrt::Error";
  return Error("none");
}

TEST(Errors, DeviceMismatchNamesBothDevicesShapesAndOp) {
  Tensor a = ones({2, 3});
  Tensor b = ones({4, 3}).to(test::emu_device());
  Error e = catch_error([&] { add(a, b); });
  EXPECT_EQ(e.rule(), "GD001");
  const std::string msg = e.what();
  EXPECT_EQ(msg.rfind("GD001 device-mismatch: add", 0), 0u) << msg;
  EXPECT_NE(msg.find("cpu [2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("emu:0 [4, 3]"), std::string::npos) << msg;
  // The usual fix: the tensor left on the host goes to the device, not the other way.
  EXPECT_NE(msg.find("move the host one with .to(Device::parse(\"emu:0\"))"), std::string::npos) << msg;
  EXPECT_EQ(catch_error([&] { conv2d(ones({1, 3, 4, 4}), ones({2, 3, 3, 3}).to(test::emu_device())); }).rule(), "GD001");
}

TEST(Errors, ComputeOnAnotherBackendGoesThroughItsKernels) {
  Tensor a = from_vector<float>({1, 2, 3}, {3}).to(test::emu_device());
  Tensor b = mul(a, a);
  EXPECT_EQ(b.device(), test::emu_device());
  EXPECT_EQ(b.to(cpu_device()).to_vector<float>(), (std::vector<float>{1, 4, 9}));
}

TEST(Errors, Float64LeakIsAnErrorWithTheFix) {
  Tensor a = ones({2, 2});
  Tensor b = ones({2, 2}, TensorOptions{}.with_dtype(DType::f64));
  Error e = catch_error([&] { mul(a, b); });
  EXPECT_EQ(e.rule(), "GD002");
  const std::string msg = e.what();
  EXPECT_EQ(msg.rfind("GD002 float64-leak: mul", 0), 0u) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos);
  EXPECT_NE(msg.find(".to(DType::f32)"), std::string::npos) << msg;
  AllowFloat64Promotion allow;
  EXPECT_EQ(mul(a, b).dtype(), DType::f64);
}

TEST(Errors, ScalarAccessOnDeviceNeedsAllowScalar) {
  Tensor d = full({3}, 2.0).to(test::emu_device());
  Error e = catch_error([&] { (void)d.at({0}); });
  EXPECT_EQ(e.rule(), "GD005");
  EXPECT_EQ(std::string(e.what()).rfind("GD005 scalar-indexing: ", 0), 0u);
  EXPECT_NE(std::string(e.what()).find("AllowScalar"), std::string::npos);
  EXPECT_EQ(catch_error([&] { (void)sum(d).item(); }).rule(), "GD005");
  {
    AllowScalar allow;
    EXPECT_DOUBLE_EQ(sum(d).item(), 6.0);
  }
  EXPECT_EQ(catch_error([&] { (void)d.at({1}); }).rule(), "GD005");  // the scope ended
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{2, 2, 2}));   // bulk copies are fine
}

TEST(Errors, ShapeMismatchNamesBothShapes) {
  const std::string add_msg = catch_error([] { add(ones({2, 3}), ones({4})); }).what();
  EXPECT_NE(add_msg.find("[2, 3]"), std::string::npos);
  EXPECT_NE(add_msg.find("[4]"), std::string::npos);
  const std::string mm = catch_error([] { matmul(ones({2, 3}), ones({4, 5})); }).what();
  EXPECT_NE(mm.find("[2, 3]"), std::string::npos);
  EXPECT_NE(mm.find("[4, 5]"), std::string::npos);
  const std::string conv = catch_error([] { conv2d(ones({1, 3, 8, 8}), ones({4, 2, 3, 3})); }).what();
  EXPECT_NE(conv.find("[1, 3, 8, 8]"), std::string::npos) << conv;
  const std::string bce =
      catch_error([] { binary_cross_entropy_with_logits(ones({2, 1, 4, 4}), ones({2, 4, 4})); }).what();
  EXPECT_NE(bce.find("[2, 1, 4, 4]"), std::string::npos);
  EXPECT_NE(bce.find("[2, 4, 4]"), std::string::npos);
  EXPECT_THROW(ones({2, 3}).reshape({4, 2}), Error);
  EXPECT_THROW(cat({ones({2, 3}), ones({3, 3})}, 1), Error);
  EXPECT_THROW(max_pool2d(ones({1, 1, 1, 1}), 2), Error);
  EXPECT_THROW(cross_entropy(ones({2, 3}), from_vector<std::int64_t>({0, 3}, {2})), Error);
}

TEST(Errors, UnsupportedDtypesAreRefusedClearly) {
  Tensor h = ones({2}).to(DType::f16);
  const std::string msg = catch_error([&] { exp(h); }).what();
  EXPECT_NE(msg.find("float16"), std::string::npos);
  EXPECT_THROW(add(ones({2}), ones({2}, TensorOptions{}.with_dtype(DType::i64))), Error);
  EXPECT_THROW(Tensor().shape(), Error);
  EXPECT_THROW(backend(Device{DeviceKind::cuda, 64}), Error);  // a GPU no machine here has
}

}  // namespace
}  // namespace gdrt
