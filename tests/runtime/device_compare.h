// Comparing what an accelerator device computes with what cpu computes, for
// the device test suites (device_*_test.cpp): which devices this build can
// run, tolerances, and a comparison that also catches elements a device
// kernel never wrote (emu fills new memory with NaN).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gdrt/gdrt.h"

namespace gdrt {
// Test parameters print as "emu:0" rather than as bytes.
inline void PrintTo(const Device& device, std::ostream* os) { *os << device.str(); }
}  // namespace gdrt

namespace gdrt::test {

// The accelerators the suites run on, present or not: emu:0 and cuda:0.
std::vector<Device> accelerator_devices();
// Why `device` cannot run in this build or on this machine, or nothing if it can.
std::optional<std::string> device_unavailable(const Device& device);

struct Tolerance {
  double atol, rtol;
};
// Copies, fills, comparisons, argmax, pooling: the same bits everywhere.
inline constexpr Tolerance kExact{0.0, 0.0};
// Elementwise math: a device's libm may round differently in the last place.
inline constexpr Tolerance kTight{1e-6, 1e-5};
// Convolutions, matmul, batch norm and reductions: summation order differs.
inline constexpr Tolerance kLoose{1e-4, 1e-3};

// `on_device` lives on `device`, has the dtype and shape of `on_cpu`, holds
// no NaN where `on_cpu` has none, and matches it within `tol`.
::testing::AssertionResult matches_cpu(const Tensor& on_device, const Tensor& on_cpu, const Device& device,
                                       Tolerance tol);

// "emu", "cuda": for test names.
std::string device_label(const Device& device);

}  // namespace gdrt::test
