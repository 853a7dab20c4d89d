// Helpers shared by the gdrt tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gdrt/gdrt.h"

namespace gdrt::test {

// Max |a - b| over elements, after checking the shapes agree.
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol, double rtol = 0.0);
// The golden tensors of one file (loaded once per process).
const TensorMap& golden(const std::string& file);
const Tensor& golden_tensor(const std::string& file, const std::string& key);
// emu:0, the emulated GPU: a device whose memory the host cannot touch.
Device emu_device();

}  // namespace gdrt::test
