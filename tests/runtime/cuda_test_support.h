// What the cuda backend tests share: a fixture that skips without a usable
// CUDA device (saying why) and runs one kernel descriptor on the cpu and the
// GPU, and the comparisons of what each wrote.
#pragma once
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>

#include "cuda/cuda_backend.h"
#include "gdrt/backend.h"
#include "gdrt/error.h"

namespace gdrt {

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!backend_registered(DeviceKind::cuda)) GTEST_SKIP() << "no CUDA device: this build has no cuda backend";
    try {
      gpu_ = &backend(Device{DeviceKind::cuda, 0});
    } catch (const Error& e) {
      GTEST_SKIP() << "no CUDA device: " << e.what();
    }
  }
  cuda::CudaBackend& cuda_backend() { return dynamic_cast<cuda::CudaBackend&>(*gpu_); }

  // Runs `op`, whose pointers are host buffers, on the cpu, and on device
  // copies of every buffer (taken before the cpu writes any) on the GPU;
  // returns what each wrote, buffer by buffer in buffers() order.
  struct Written {
    std::vector<std::vector<std::byte>> cpu, gpu;
  };
  Written run_both(KernelOp op) {
    KernelOp dev = op;
    std::vector<std::pair<void*, std::size_t>> device_buffers;
    std::vector<std::pair<const void*, std::size_t>> host_writes;
    for_each_buffer(op, [&](auto* p, std::size_t bytes, Access a) {
      if (a == Access::write) host_writes.emplace_back(p, bytes);
    });
    for_each_buffer(dev, [&](auto*& p, std::size_t bytes, Access a) {
      void* d = gpu_->allocate(bytes, 0);
      gpu_->copy(d, MemoryKind::device, p, MemoryKind::host_pageable, bytes, 0, 0);
      if (a == Access::write) device_buffers.emplace_back(d, bytes);
      else device_buffers.emplace_back(d, 0);
      p = static_cast<std::remove_reference_t<decltype(p)>>(d);
    });
    backend(cpu_device()).launch(op, 0, 0);
    gpu_->launch(dev, 0, 0);
    gpu_->synchronize(0);
    Written out;
    for (auto [p, bytes] : host_writes) {
      const auto* b = static_cast<const std::byte*>(p);
      out.cpu.emplace_back(b, b + bytes);
    }
    for (auto [d, bytes] : device_buffers) {
      if (bytes) {
        out.gpu.emplace_back(bytes);
        gpu_->copy(out.gpu.back().data(), MemoryKind::host_pageable, d, MemoryKind::device, bytes, 0, 0);
      }
    }
    gpu_->synchronize(0);
    for (auto [d, bytes] : device_buffers) gpu_->deallocate(d, bytes, 0, {});
    return out;
  }

  Backend* gpu_ = nullptr;
};

inline std::mt19937& rng() {
  static std::mt19937 r(1234);
  return r;
}

inline std::vector<float> uniform_floats(std::size_t n, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

inline std::vector<std::int64_t> row_major(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> st(sizes.size());
  std::int64_t s = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s *= sizes[i];
  }
  return st;
}

inline TensorView view(void* data, DType dtype, std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides = {}) {
  if (strides.empty()) strides = row_major(sizes);
  return TensorView{data, dtype, std::move(sizes), std::move(strides)};
}

// Element-wise comparison of two written buffers of `dtype`; NaNs must match NaNs.
template <class T>
inline void expect_close_as(const std::vector<std::byte>& cpu, const std::vector<std::byte>& gpu, double atol, double rtol,
                     const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  const std::size_t n = cpu.size() / sizeof(T);
  int reported = 0;
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, cpu.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, gpu.data() + i * sizeof(T), sizeof(T));
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    bool ok = (std::isnan(x) && std::isnan(y)) || x == y || std::abs(x - y) <= atol + rtol * std::abs(x);
    if (!ok && reported++ < 5) ADD_FAILURE() << what << ": element " << i << " cpu " << x << " gpu " << y;
  }
}

inline void expect_close(DType dtype, const std::vector<std::byte>& cpu, const std::vector<std::byte>& gpu, double atol,
                  double rtol, const std::string& what) {
  switch (dtype) {
    case DType::f32: return expect_close_as<float>(cpu, gpu, atol, rtol, what);
    case DType::f64: return expect_close_as<double>(cpu, gpu, atol, rtol, what);
    case DType::i32: return expect_close_as<std::int32_t>(cpu, gpu, atol, rtol, what);
    case DType::i64: return expect_close_as<std::int64_t>(cpu, gpu, atol, rtol, what);
    case DType::f16: case DType::u8: case DType::boolean: EXPECT_EQ(cpu, gpu) << what; return;
  }
}

inline void expect_bits_equal(const std::vector<std::byte>& cpu, const std::vector<std::byte>& gpu, const std::string& what) {
  EXPECT_EQ(cpu, gpu) << what;
}

}  // namespace gdrt
