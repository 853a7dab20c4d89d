// The CPU backend's kernels (host memory, OpenMP threads, OpenBLAS GEMM).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "gdrt/backend.h"
#include "cpu/parallel.h"
#include "gdrt/error.h"

// Hot row loops are also compiled for AVX-512 and AVX2; the loader picks
// the widest the CPU has (function multiversioning), while the library
// itself stays built for the baseline x86-64 every machine runs. Not under
// ThreadSanitizer: the loader runs the resolvers before its runtime is up,
// and their instrumented code faults.
#if defined(__SANITIZE_THREAD__)  // GCC
#define GDRT_THREAD_SANITIZER 1
#elif defined(__has_feature)  // clang
#if __has_feature(thread_sanitizer)
#define GDRT_THREAD_SANITIZER 1
#endif
#endif
#if defined(GDRT_THREAD_SANITIZER)
#define GDRT_WIDE_SIMD
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GDRT_WIDE_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GDRT_WIDE_SIMD
#endif

namespace gdrt::cpu {

// Every op of gdrt/kernel_op.h on host memory; run() dispatches a descriptor.
class CpuKernels final {
 public:
  void fill(const TensorView& out, double value);
  void copy(const TensorView& out, const TensorView& in);
  void unary(UnaryOp op, const TensorView& out, const TensorView& in, double alpha);
  void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b);
  void reduce(ReduceOp op, const TensorView& out, const TensorView& in);
  void random(const TensorView& out, Distribution dist, std::uint64_t seed, std::uint64_t offset, double a,
              double b);
  void matmul(DType dtype, bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
              std::int64_t k, const void* a, const void* b, void* c, double beta);
  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y);
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx);
  void conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db);
  void conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx, float* dw,
                       float* db);
  void max_pool2d_forward(const PoolGeometry& g, const float* x, float* y, std::int32_t* argmax);
  void max_pool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax, float* dx);
  void batch_norm_train(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w,
                        const float* b, float* running_mean, float* running_var, double momentum, double eps, float* y,
                        float* save_mean, float* save_invstd, bool relu);
  void batch_norm_eval(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w, const float* b,
                       const float* running_mean, const float* running_var, double eps, float* y, bool relu);
  void batch_norm_backward(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* dy,
                           const float* w, const float* mean, const float* invstd, bool training, const float* relu_out,
                           float* dx, float* dw, float* db);
  void relu_backward(std::int64_t n, const float* y, const float* dy, float* dx);
  void adam_update(std::int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                   const AdamUpdate& u);
  // Runs `op` now, on the calling thread (and gdrt's pool).
  void run(const KernelOp& op);
};

// Prepares a thread other than the program's own to run kernels (an emu
// stream): oneDNN's OpenMP stays single-threaded in it, as in the pool's
// threads, instead of starting a team whose threads spin between calls.
void adopt_kernel_thread();

// Calls row(offsets, count, inner_strides) for every innermost row of the
// common shape `sizes`, in parallel when the work is large. Offsets and
// strides are in elements, one per operand.
template <std::size_t N, class Row>
void for_each_row(const std::vector<std::int64_t>& sizes, const std::array<const std::vector<std::int64_t>*, N>& strides,
                  Row&& row) {
  std::int64_t numel = 1;
  for (auto s : sizes) numel *= s;
  if (numel == 0) return;
  const std::size_t rank = sizes.size();
  bool contiguous = true;
  for (auto* st : strides) {
    std::int64_t expect = 1;
    for (std::size_t i = rank; i-- > 0;) {
      if (sizes[i] != 1 && (*st)[i] != expect) contiguous = false;
      expect *= sizes[i];
    }
  }
  if (rank == 0 || contiguous) {
    constexpr std::int64_t chunk = 1 << 15;
    const std::int64_t chunks = (numel + chunk - 1) / chunk;
    parallel_for(chunks, chunks > 1, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) {
        std::array<std::int64_t, N> off, inner;
        off.fill(c * chunk);
        inner.fill(1);
        row(off, std::min(chunk, numel - c * chunk), inner);
      }
    });
    return;
  }
  // Merge adjacent dimensions that every operand walks with one stride
  // (e.g. a channel slice of NCHW is N rows of C*H*W), so rows stay long.
  std::vector<std::int64_t> sz;
  std::array<std::vector<std::int64_t>, N> stv;
  for (std::size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !sz.empty();
    for (std::size_t k = 0; k < N && merge; ++k) merge = stv[k].back() == (*strides[k])[d] * sizes[d];
    if (merge) {
      sz.back() *= sizes[d];
      for (std::size_t k = 0; k < N; ++k) stv[k].back() = (*strides[k])[d];
    } else {
      sz.push_back(sizes[d]);
      for (std::size_t k = 0; k < N; ++k) stv[k].push_back((*strides[k])[d]);
    }
  }
  const std::size_t crank = sz.size();
  const std::int64_t inner_n = sz[crank - 1];
  // Long rows are cut into pieces so both rows and pieces spread over the pool.
  constexpr std::int64_t piece = 1 << 15;
  const std::int64_t pieces = (inner_n + piece - 1) / piece;
  const std::int64_t rows = numel / inner_n;
  std::array<std::int64_t, N> inner;
  for (std::size_t k = 0; k < N; ++k) inner[k] = stv[k][crank - 1];
  parallel_for(rows * pieces, numel > (1 << 15), [&](std::int64_t w0, std::int64_t w1) {
    for (std::int64_t w = w0; w < w1; ++w) {
      const std::int64_t r = w / pieces, p0 = (w % pieces) * piece;
      std::array<std::int64_t, N> off{};
      std::int64_t rem = r;
      for (std::size_t d = crank - 1; d-- > 0;) {
        const std::int64_t idx = rem % sz[d];
        rem /= sz[d];
        for (std::size_t k = 0; k < N; ++k) off[k] += idx * stv[k][d];
      }
      for (std::size_t k = 0; k < N; ++k) off[k] += p0 * inner[k];
      row(off, std::min(piece, inner_n - p0), inner);
    }
  });
}

}  // namespace gdrt::cpu
