// Device-side helpers shared by the .cu files: strided indexing with the
// views' dimensions coalesced on the host (at most kMaxRank remain) and the
// grid-stride launch every elementwise kernel uses. Dtype loads and stores
// are ops/scalar_convert.h's, the cpu backend's own.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "gdrt/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/scalar_convert.h"

namespace gdrt::cuda {

constexpr int kMaxRank = 8;
constexpr int kBlock = 256;

// N operands walked over one shape; strides in elements.
template <int N>
struct Strided {
  int rank = 0;
  bool contiguous = true;  // every operand is dense row-major: offset == index
  std::int64_t numel = 1;
  std::int64_t sizes[kMaxRank] = {};
  std::int64_t strides[N][kMaxRank] = {};
};

// Drops size-1 dimensions and merges neighbours every operand walks with one
// stride (a contiguous tensor becomes one dimension), so kernels divide
// once per remaining dimension. Refuses more than kMaxRank dimensions left.
template <int N>
Strided<N> make_strided(const std::vector<std::int64_t>& sizes,
                        const std::array<const std::vector<std::int64_t>*, N>& strides, const char* what) {
  Strided<N> s;
  std::vector<std::int64_t> sz;
  std::array<std::vector<std::int64_t>, N> st;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    s.numel *= sizes[d];
    if (sizes[d] == 1) continue;
    bool merge = !sz.empty();
    for (int k = 0; k < N && merge; ++k) merge = st[k].back() == (*strides[k])[d] * sizes[d];
    if (merge) {
      sz.back() *= sizes[d];
      for (int k = 0; k < N; ++k) st[k].back() = (*strides[k])[d];
    } else {
      sz.push_back(sizes[d]);
      for (int k = 0; k < N; ++k) st[k].push_back((*strides[k])[d]);
    }
  }
  if (sz.size() > static_cast<std::size_t>(kMaxRank))
    throw Error(std::string("cuda ") + what + ": a view with " + std::to_string(sz.size()) +
                " non-mergeable dimensions; the cuda kernels take at most " + std::to_string(kMaxRank));
  s.rank = static_cast<int>(sz.size());
  for (int d = 0; d < s.rank; ++d) {
    s.sizes[d] = sz[static_cast<std::size_t>(d)];
    for (int k = 0; k < N; ++k) s.strides[k][d] = st[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
  }
  for (int k = 0; k < N; ++k) s.contiguous = s.contiguous && (s.rank == 0 || (s.rank == 1 && s.strides[k][0] == 1));
  return s;
}

template <int N>
__device__ __forceinline__ void offsets_of(const Strided<N>& s, std::int64_t i, std::int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const std::int64_t size = s.sizes[d];
    const std::int64_t idx = i % size;
    i /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * s.strides[k][d];
  }
}

template <int N, bool Contiguous, class F>
__global__ void strided_kernel(Strided<N> s, F f) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < s.numel; i += step) {
    std::int64_t off[N];
    if constexpr (Contiguous) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      offsets_of(s, i, off);
    }
    f(i, off);
  }
}

inline unsigned grid_for(const LaunchContext& ctx, std::int64_t n, int block = kBlock) {
  const std::int64_t blocks = (n + block - 1) / block;
  const std::int64_t cap = static_cast<std::int64_t>(std::max(ctx.sm_count, 1)) * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

// f(index, offsets) for every element of the walk, on ctx.stream.
template <int N, class F>
void for_each_element(const LaunchContext& ctx, const Strided<N>& s, F f, const char* kernel) {
  if (s.numel == 0) return;
  if (s.contiguous) strided_kernel<N, true><<<grid_for(ctx, s.numel), kBlock, 0, ctx.stream>>>(s, f);
  else strided_kernel<N, false><<<grid_for(ctx, s.numel), kBlock, 0, ctx.stream>>>(s, f);
  check_launch(kernel);
}

}  // namespace gdrt::cuda
