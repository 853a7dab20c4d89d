// The data every gdrt sample trains on: noisy images with one to three bright
// discs or rectangles, and a mask of the shape pixels. Image i is built on
// the host from a generator seeded by (seed, i), so every worker and every
// run sees the same example, and a sample's fixed twin sees the same data.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "gdrt/gdrt.h"

namespace samples {

class SyntheticShapes final : public gdrt::data::Dataset {
 public:
  SyntheticShapes(std::int64_t count, std::int64_t size, std::uint64_t seed)
      : count_(count), size_(size), seed_(seed) {}
  std::int64_t size() const override { return count_; }
  gdrt::data::Example get(std::int64_t index) const override {
    using namespace gdrt;
    Generator gen(seed_ * 1000003u + static_cast<std::uint64_t>(index));
    auto uniform01 = [&] { return static_cast<double>(gen.next_u64() >> 11) * 0x1.0p-53; };
    const std::int64_t s = size_;
    std::vector<float> mask(static_cast<std::size_t>(s * s), 0.0f);
    const int shapes = 1 + static_cast<int>(gen.next_u64() % 3);
    for (int k = 0; k < shapes; ++k) {
      const double cx = uniform01() * s, cy = uniform01() * s, r = (0.1 + 0.15 * uniform01()) * s;
      const bool disc = gen.next_u64() % 2 == 0;
      for (std::int64_t y = 0; y < s; ++y)
        for (std::int64_t x = 0; x < s; ++x) {
          const double dx = static_cast<double>(x) - cx, dy = static_cast<double>(y) - cy;
          const bool inside = disc ? dx * dx + dy * dy <= r * r : std::abs(dx) <= r && std::abs(dy) <= 0.6 * r;
          if (inside) mask[static_cast<std::size_t>(y * s + x)] = 1.0f;
        }
    }
    Tensor noise = randn({3, s, s}, gen);
    Tensor m = from_vector<float>(mask, {1, s, s});
    // Shapes are brighter in every channel, by a different amount each.
    Tensor tint = from_vector<float>({1.0f, 0.7f, 1.3f}, {3, 1, 1});
    return {add(mul(noise, 0.6), mul(m, tint)), m};
  }

 private:
  std::int64_t count_, size_;
  std::uint64_t seed_;
};

}  // namespace samples
