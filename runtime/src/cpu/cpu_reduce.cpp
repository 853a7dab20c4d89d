// Reductions and GEMM on host memory.
#include <cblas.h>

#include "cpu/cpu_kernels.h"
#include "ops/dtype_dispatch.h"
#include "ops/scalar_reduce.h"

namespace gdrt::cpu {

namespace {

template <class T>
void reduce_typed(ReduceOp op, const TensorView& out, const TensorView& in) {
  // Split the dims into kept (out size == in size) and reduced (out size 1).
  const std::size_t rank = in.sizes.size();
  std::vector<std::int64_t> kept_sizes, kept_in_strides, kept_out_strides, red_sizes, red_strides;
  for (std::size_t d = 0; d < rank; ++d) {
    if (in.sizes[d] == 1) continue;
    if (out.sizes[d] == in.sizes[d]) {
      kept_sizes.push_back(in.sizes[d]);
      kept_in_strides.push_back(in.strides[d]);
      kept_out_strides.push_back(out.strides[d]);
    } else {
      red_sizes.push_back(in.sizes[d]);
      red_strides.push_back(in.strides[d]);
    }
  }
  // Adjacent reduced dims one stride apart (H and W of NCHW) become one, so
  // the innermost reduced run is as long as possible.
  for (std::size_t d = red_sizes.size(); d-- > 1;) {
    if (red_strides[d - 1] != red_strides[d] * red_sizes[d]) continue;
    red_sizes[d - 1] *= red_sizes[d];
    red_strides[d - 1] = red_strides[d];
    red_sizes.erase(red_sizes.begin() + static_cast<std::ptrdiff_t>(d));
    red_strides.erase(red_strides.begin() + static_cast<std::ptrdiff_t>(d));
  }
  std::int64_t outer = 1, red_n = 1;
  for (auto s : kept_sizes) outer *= s;
  for (auto s : red_sizes) red_n *= s;
  const std::size_t nred = red_sizes.size();
  const std::int64_t row_n = nred ? red_sizes[nred - 1] : 1, row_stride = nred ? red_strides[nred - 1] : 1;
  const T* x = static_cast<const T*>(in.data);
  using Acc = scalar::ReduceAcc<T>;
  using Partial = scalar::ReducePartial<Acc>;
  // Reduces elements [begin, end) of the reduced index space, walking whole
  // innermost rows: the offset arithmetic happens once per row, and a
  // contiguous float row sums with vector lanes (in double).
  auto reduce_one = [&](std::int64_t in_base, std::int64_t begin, std::int64_t end, Partial& acc) {
    for (std::int64_t r = begin; r < end;) {
      const std::int64_t j0 = r % row_n, len = std::min(row_n - j0, end - r);
      std::int64_t off = in_base + j0 * row_stride, rem = r / row_n;
      for (std::size_t d = nred ? nred - 1 : 0; d-- > 0;) {
        off += (rem % red_sizes[d]) * red_strides[d];
        rem /= red_sizes[d];
      }
      const T* p = x + off;
      if (op == ReduceOp::sum && row_stride == 1) {
        Acc s = 0;
#pragma omp simd reduction(+ : s)
        for (std::int64_t j = 0; j < len; ++j) s += static_cast<Acc>(p[j]);
        acc.value += s;
      } else {
        for (std::int64_t j = 0; j < len; ++j)
          scalar::reduce_fold(op, acc, static_cast<Acc>(p[j * row_stride]), r + j);
      }
      r += len;
    }
  };
  if (outer == 1 && op == ReduceOp::sum && red_n > (1 << 16)) {
    double partial[64] = {};  // one output: split the reduction itself across threads
    parallel_for(64, true, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        Partial acc = scalar::reduce_start<Acc>(op);
        reduce_one(0, red_n * t / 64, red_n * (t + 1) / 64, acc);
        partial[t] = static_cast<double>(acc.value);
      }
    });
    double total = 0;
    for (double v : partial) total += v;
    scalar::reduce_store<T>(op, out.data, 0, Partial{static_cast<Acc>(total), -1});
    return;
  }
  parallel_for(outer, outer * red_n > (1 << 15), [&](std::int64_t o0, std::int64_t o1) {
  for (std::int64_t o = o0; o < o1; ++o) {
    std::int64_t in_off = 0, out_off = 0, rem = o;
    for (std::size_t d = kept_sizes.size(); d-- > 0;) {
      const std::int64_t idx = rem % kept_sizes[d];
      rem /= kept_sizes[d];
      in_off += idx * kept_in_strides[d];
      out_off += idx * kept_out_strides[d];
    }
    Partial acc = scalar::reduce_start<Acc>(op);
    reduce_one(in_off, 0, red_n, acc);
    scalar::reduce_store<T>(op, out.data, out_off, acc);
  }
  });
}

}  // namespace

void CpuKernels::reduce(ReduceOp op, const TensorView& out, const TensorView& in) {
  GDRT_DTYPE_DISPATCH("cpu", in.dtype, T, reduce_typed<T>(op, out, in));
}

void CpuKernels::matmul(DType dtype, bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                        std::int64_t k, const void* a, const void* b, void* c, double beta) {
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(trans_a ? m : k), ldb = static_cast<blasint>(trans_b ? k : n);
  for (std::int64_t i = 0; i < batch; ++i) {
    if (dtype == DType::f32) {
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k),
                  1.0f, static_cast<const float*>(a) + i * m * k, lda, static_cast<const float*>(b) + i * k * n, ldb,
                  static_cast<float>(beta), static_cast<float*>(c) + i * m * n, static_cast<blasint>(n));
    } else if (dtype == DType::f64) {
      cblas_dgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k),
                  1.0, static_cast<const double*>(a) + i * m * k, lda, static_cast<const double*>(b) + i * k * n, ldb,
                  beta, static_cast<double*>(c) + i * m * n, static_cast<blasint>(n));
    } else {
      throw Error("matmul supports float32 and float64, got " + std::string(dtype_name(dtype)));
    }
  }
}

}  // namespace gdrt::cpu
