// The images most CUDA samples train on: kSize x kSize pixels in 3 channel
// planes, one image after another, each with one disc, and the disc's mask
// (1 inside, 0 outside). Each generator draws the same images on every run,
// so a sample's fixed twin trains on exactly the data its buggy twin does.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

constexpr int kSize = 32, kPixels = kSize * kSize;

// Faint discs: Gaussian noise (sigma 0.6) everywhere, the disc 0.7, 1.0 and
// 1.3 brighter in the three channels; radius 0.1 to 0.25 of the side.
inline void make_discs(std::vector<float>& images, std::vector<float>& masks, int count) {
  images.assign(static_cast<std::size_t>(count) * 3 * kPixels, 0.0f);
  masks.assign(static_cast<std::size_t>(count) * kPixels, 0.0f);
  std::mt19937 gen(1);
  std::normal_distribution<float> noise(0.0f, 0.6f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int i = 0; i < count; ++i) {
    const float cx = uniform(gen) * kSize, cy = uniform(gen) * kSize, r = (0.1f + 0.15f * uniform(gen)) * kSize;
    for (int p = 0; p < kPixels; ++p) {
      const float dx = static_cast<float>(p % kSize) - cx, dy = static_cast<float>(p / kSize) - cy;
      const float m = dx * dx + dy * dy <= r * r ? 1.0f : 0.0f;
      masks[i * kPixels + p] = m;
      for (int c = 0; c < 3; ++c) images[(i * 3 + c) * kPixels + p] = noise(gen) + m * (0.7f + 0.3f * c);
    }
  }
}

// Clear discs: 0.7 to 1.0 inside, 0.2 to 0.5 outside, in every channel;
// radius 3 to 9 pixels. `seed` gives a training and a validation set.
inline void make_shapes(std::vector<float>& images, std::vector<float>& masks, int count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  images.assign(static_cast<std::size_t>(count) * 3 * kPixels, 0.0f);
  masks.assign(static_cast<std::size_t>(count) * kPixels, 0.0f);
  for (int n = 0; n < count; ++n) {
    const float cx = u(gen) * kSize, cy = u(gen) * kSize, r = 3.0f + 6.0f * u(gen);
    for (int p = 0; p < kPixels; ++p) {
      const float dx = p % kSize - cx, dy = p / kSize - cy;
      const bool in = dx * dx + dy * dy < r * r;
      masks[static_cast<std::size_t>(n) * kPixels + p] = in ? 1.0f : 0.0f;
      for (int c = 0; c < 3; ++c)
        images[(static_cast<std::size_t>(n) * 3 + c) * kPixels + p] = (in ? 0.7f : 0.2f) + 0.3f * u(gen);
    }
  }
}
