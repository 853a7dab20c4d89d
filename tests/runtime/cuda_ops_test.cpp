// The cuda backend's kernels on a real device: every op against the cpu
// backend's result for the same descriptor and inputs (the cpu defines the
// semantics). Without a usable CUDA device every test skips, saying why.
#include <cmath>
#include <cstring>
#include <limits>

#include "cuda_test_support.h"

namespace gdrt {
namespace {

TEST_F(CudaBackend, FillMatchesCpuOnStridedViewsOfEveryDtype) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean}) {
    std::vector<std::byte> buf(6 * 8 * itemsize(dt), std::byte{0x5a});
    // Every other column of a 6x8 matrix, transposed.
    auto out = view(buf.data(), dt, {4, 6}, {2, 8});
    auto w = run_both(ops::Fill{out, -3.75});
    expect_bits_equal(w.cpu[0], w.gpu[0], std::string("fill ") + std::string(dtype_name(dt)));
  }
}

TEST_F(CudaBackend, CopyConvertsBetweenDtypesAsTheCpu) {
  const std::vector<DType> dtypes{DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8,
                                  DType::boolean};
  auto src_values = uniform_floats(5 * 7, -300.0f, 300.0f);
  src_values[4] = 0.0f;
  src_values[5] = 65519.0f;  // rounds to half's largest finite
  src_values[6] = -0.0f;
  for (DType from : dtypes)
    for (DType to : dtypes) {
      std::vector<std::byte> in(35 * itemsize(from)), out(35 * itemsize(to), std::byte{0});
      // Fill the source through the cpu's own conversion from f32; a NaN
      // only where the target is floating or bool (NaN to an integer is
      // undefined behaviour in C++, so the cpu defines nothing to match).
      auto f = src_values;
      if (is_floating(to) || to == DType::boolean) f[3] = std::numeric_limits<float>::quiet_NaN();
      // Out-of-range float to uint8 is undefined too (the cpu's vectorised
      // loop may saturate): values the target can hold.
      if (to == DType::u8)
        for (auto& v : f) v = std::floor(std::fmod(std::abs(v), 256.0f));
      backend(cpu_device()).launch(ops::Copy{view(in.data(), from, {5, 7}), view(f.data(), DType::f32, {5, 7})}, 0,
                                   0);
      // A transposed read: out[j][i] = in[i][j].
      auto w = run_both(ops::Copy{view(out.data(), to, {7, 5}), view(in.data(), from, {7, 5}, {1, 7})});
      expect_bits_equal(w.cpu[0], w.gpu[0],
                        "copy " + std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
    }
}

TEST_F(CudaBackend, UnaryOpsMatchCpu) {
  const std::vector<std::int64_t> sizes{3, 4, 5};
  auto x = uniform_floats(60, 0.05f, 3.0f);  // positive, so log/sqrt are defined
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -x[i];
  for (int k = 0; k <= static_cast<int>(kLastUnaryOp); ++k) {
    const auto op = static_cast<UnaryOp>(k);
    if ((op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::rsqrt || op == UnaryOp::log1p))
      for (auto& v : x) v = std::abs(v);
    std::vector<float> out(60);
    // Reads a permuted view of x.
    auto w = run_both(ops::Unary{op, view(out.data(), DType::f32, {5, 4, 3}),
                                 view(x.data(), DType::f32, {5, 4, 3}, {1, 5, 20}), 0.1});
    expect_close(DType::f32, w.cpu[0], w.gpu[0], 1e-6, 4e-6, "unary op " + std::to_string(k));
    std::vector<double> xd(x.begin(), x.end()), od(60);
    auto wd = run_both(ops::Unary{op, view(od.data(), DType::f64, sizes), view(xd.data(), DType::f64, sizes), 0.1});
    expect_close(DType::f64, wd.cpu[0], wd.gpu[0], 1e-14, 1e-14, "unary f64 op " + std::to_string(k));
  }
}

TEST_F(CudaBackend, BinaryOpsBroadcastAndCompareAsTheCpu) {
  auto a = uniform_floats(4 * 6, 0.1f, 3.0f);
  auto b = uniform_floats(6, 0.1f, 3.0f);
  a[2] = b[2];  // an exact tie for the comparisons
  a[7] = std::numeric_limits<float>::quiet_NaN();
  for (int k = 0; k <= static_cast<int>(kLastBinaryOp); ++k) {
    const auto op = static_cast<BinaryOp>(k);
    const bool cmp = op >= BinaryOp::gt;
    std::vector<float> out(24);
    std::vector<std::uint8_t> out_b(24);
    TensorView o = cmp ? view(out_b.data(), DType::boolean, {4, 6}) : view(out.data(), DType::f32, {4, 6});
    // b is one row broadcast over 4 (stride 0).
    auto w = run_both(ops::Binary{op, o, view(a.data(), DType::f32, {4, 6}), view(b.data(), DType::f32, {4, 6}, {0, 1})});
    expect_close(cmp ? DType::boolean : DType::f32, w.cpu[0], w.gpu[0], 1e-6, 4e-6, "binary op " + std::to_string(k));
  }
  std::vector<std::int32_t> ia{1, -7, 9, 12, 40, -3}, ib{3, 2, -2, 5, 4, 7}, io(6);
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::maximum}) {
    auto w = run_both(ops::Binary{op, view(io.data(), DType::i32, {6}), view(ia.data(), DType::i32, {6}),
                                  view(ib.data(), DType::i32, {6})});
    expect_close(DType::i32, w.cpu[0], w.gpu[0], 0, 0, "int32 binary");
  }
}

TEST_F(CudaBackend, ReductionsMatchCpuIncludingTiesAndNaN) {
  const std::int64_t a = 4, b = 300, c = 5;
  auto x = uniform_floats(static_cast<std::size_t>(a * b * c));
  x[17] = x[17 + c];  // a tie along dim 1
  std::vector<float> with_nan = x;
  with_nan[5 * 7 + 2] = std::numeric_limits<float>::quiet_NaN();
  for (const auto* data : {&x, &with_nan})
    for (int k = 0; k <= static_cast<int>(ReduceOp::argmax); ++k) {
      const auto op = static_cast<ReduceOp>(k);
      for (const std::vector<std::int64_t>& out_sizes :
           {std::vector<std::int64_t>{a, 1, c}, {1, b, 1}, {a, b, 1}, {1, 1, 1}}) {
        std::int64_t n = 1;
        for (auto s : out_sizes) n *= s;
        std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
        std::vector<float> val(static_cast<std::size_t>(n));
        const DType out_dtype = op == ReduceOp::argmax ? DType::i64 : DType::f32;
        TensorView out = view(op == ReduceOp::argmax ? static_cast<void*>(idx.data()) : val.data(), out_dtype,
                              out_sizes);
        auto copy = *data;
        auto w = run_both(ops::Reduce{op, out, view(copy.data(), DType::f32, {a, b, c})});
        const double tol = op == ReduceOp::sum ? 2e-5 : 0.0;
        expect_close(out_dtype, w.cpu[0], w.gpu[0], tol, tol,
                     "reduce op " + std::to_string(k) + " to " + std::to_string(n) + " outputs");
      }
    }
}

TEST_F(CudaBackend, LongReductionsSplitAcrossBlocksAgreeWithCpu) {
  // Few outputs over many elements: the sliced two-pass path.
  const std::int64_t rows = 3, cols = 400000;
  auto x = uniform_floats(static_cast<std::size_t>(rows * cols));
  x[250000] = 7.0f;   // the maximum of row 0, twice: argmax keeps the first
  x[390000] = 7.0f;
  x[cols + 5] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN for max, skipped by argmax
  for (int k = 0; k <= static_cast<int>(ReduceOp::argmax); ++k) {
    const auto op = static_cast<ReduceOp>(k);
    for (const std::vector<std::int64_t>& out_sizes : {std::vector<std::int64_t>{rows, 1}, {1, 1}}) {
      std::vector<std::int64_t> idx(static_cast<std::size_t>(out_sizes[0]));
      std::vector<float> val(idx.size());
      const DType out_dtype = op == ReduceOp::argmax ? DType::i64 : DType::f32;
      TensorView out = view(op == ReduceOp::argmax ? static_cast<void*>(idx.data()) : val.data(), out_dtype, out_sizes);
      auto w = run_both(ops::Reduce{op, out, view(x.data(), DType::f32, {rows, cols})});
      const double tol = op == ReduceOp::sum ? 1e-5 : 0.0;
      expect_close(out_dtype, w.cpu[0], w.gpu[0], tol, tol, "long reduce op " + std::to_string(k));
    }
  }
}

TEST_F(CudaBackend, RandomDrawsTheCpusNumbers) {
  for (Distribution dist : {Distribution::uniform, Distribution::normal, Distribution::bernoulli})
    for (DType dt : {DType::f32, DType::f64}) {
      std::vector<std::byte> buf(1000 * itemsize(dt));
      const double pa = dist == Distribution::bernoulli ? 0.3 : -1.5, pb = 2.5;
      auto w = run_both(ops::Random{view(buf.data(), dt, {40, 25}), dist, 42, 12345, pa, pb});
      if (dist == Distribution::normal)  // libm's log/cos and CUDA's differ in the last bit at most
        expect_close(dt, w.cpu[0], w.gpu[0], 1e-12, dt == DType::f32 ? 2e-7 : 1e-14, "normal");
      else
        expect_bits_equal(w.cpu[0], w.gpu[0], "uniform/bernoulli bits");
    }
}

TEST_F(CudaBackend, MatmulMatchesCpuForEveryTransposeAndBeta) {
  const std::int64_t batch = 3, m = 17, n = 9, k = 33;
  for (DType dt : {DType::f32, DType::f64})
    for (int t = 0; t < 4; ++t)
      for (double beta : {0.0, 1.0}) {
        auto fa = uniform_floats(static_cast<std::size_t>(batch * m * k));
        auto fb = uniform_floats(static_cast<std::size_t>(batch * k * n));
        auto fc = uniform_floats(static_cast<std::size_t>(batch * m * n));
        std::vector<double> da(fa.begin(), fa.end()), db(fb.begin(), fb.end()), dc(fc.begin(), fc.end());
        const bool f32 = dt == DType::f32;
        ops::Matmul op{dt,   (t & 1) != 0, (t & 2) != 0, batch, m, n, k, f32 ? static_cast<const void*>(fa.data()) : da.data(),
                       f32 ? static_cast<const void*>(fb.data()) : db.data(), f32 ? static_cast<void*>(fc.data()) : dc.data(),
                       beta};
        auto w = run_both(op);
        expect_close(dt, w.cpu[0], w.gpu[0], f32 ? 3e-4 : 1e-12, f32 ? 1e-5 : 1e-12, "matmul");
      }
}

ConvGeometry conv_geometry(std::int64_t stride, std::int64_t pad, std::int64_t dilation) {
  ConvGeometry g{2, 3, 11, 9, 4, 3, 3, stride, stride, pad, pad, dilation, dilation, 0, 0};
  g.out_h = (g.in_h + 2 * pad - dilation * (g.kernel_h - 1) - 1) / stride + 1;
  g.out_w = (g.in_w + 2 * pad - dilation * (g.kernel_w - 1) - 1) / stride + 1;
  return g;
}

TEST_F(CudaBackend, ConvolutionsMatchCpuInEveryDirection) {
  for (auto g : {conv_geometry(1, 1, 1), conv_geometry(2, 1, 1), conv_geometry(1, 2, 2)}) {
    auto x = uniform_floats(ops::conv_input_bytes(g) / 4), w = uniform_floats(ops::conv_weight_bytes(g) / 4);
    auto bias = uniform_floats(static_cast<std::size_t>(g.out_channels));
    auto dy = uniform_floats(ops::conv_output_bytes(g) / 4);
    std::vector<float> y(ops::conv_output_bytes(g) / 4), dx(x.size()), dw(w.size()), db(bias.size());
    // cuDNN may pick FFT or Winograd algorithms: their rounding is not a
    // direct sum's, but stays within a few float ulps of the largest term.
    const double atol = 1e-3, rtol = 1e-4;
    auto f = run_both(ops::Conv2dForward{g, x.data(), w.data(), bias.data(), y.data()});
    expect_close(DType::f32, f.cpu[0], f.gpu[0], atol, rtol, "conv2d forward");
    auto bd = run_both(ops::Conv2dBackwardData{g, dy.data(), w.data(), dx.data()});
    expect_close(DType::f32, bd.cpu[0], bd.gpu[0], atol, rtol, "conv2d backward data");
    auto bw = run_both(ops::Conv2dBackwardWeight{g, x.data(), dy.data(), dw.data(), db.data()});
    expect_close(DType::f32, bw.cpu[0], bw.gpu[0], atol, rtol, "conv2d backward weight");
    expect_close(DType::f32, bw.cpu[1], bw.gpu[1], atol, rtol, "conv2d backward bias");
    auto both = run_both(ops::Conv2dBackward{g, x.data(), dy.data(), w.data(), dx.data(), dw.data(), nullptr});
    ASSERT_EQ(both.cpu.size(), 2u);
    expect_close(DType::f32, both.cpu[0], both.gpu[0], atol, rtol, "conv2d backward dx");
    expect_close(DType::f32, both.cpu[1], both.gpu[1], atol, rtol, "conv2d backward dw");
  }
}

TEST_F(CudaBackend, MaxPoolPicksTheCpusElementsAndRoutesGradientsExactly) {
  for (auto [k, s, p] : {std::array<std::int64_t, 3>{2, 2, 0}, {3, 2, 1}, {3, 1, 1}}) {
    PoolGeometry g{2, 3, 9, 8, k, k, s, s, p, p, 0, 0};
    g.out_h = (g.in_h + 2 * p - k) / s + 1;
    g.out_w = (g.in_w + 2 * p - k) / s + 1;
    auto x = uniform_floats(static_cast<std::size_t>(ops::pool_inputs(g)));
    for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 1.0f;  // ties
    x[10] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(static_cast<std::size_t>(ops::pool_outputs(g)));
    std::vector<std::int32_t> arg(y.size());
    auto f = run_both(ops::MaxPool2dForward{g, x.data(), y.data(), arg.data()});
    expect_bits_equal(f.cpu[0], f.gpu[0], "max pool values");
    expect_bits_equal(f.cpu[1], f.gpu[1], "max pool argmax");
    // The backward pass on the cpu's argmax.
    std::memcpy(arg.data(), f.cpu[1].data(), f.cpu[1].size());
    auto dy = uniform_floats(y.size());
    std::vector<float> dx(x.size());
    auto b = run_both(ops::MaxPool2dBackward{g, dy.data(), arg.data(), dx.data()});
    expect_bits_equal(b.cpu[0], b.gpu[0], "max pool gradient");
  }
}

TEST_F(CudaBackend, BatchNormMatchesCpuWithAndWithoutRelu) {
  const std::int64_t n = 3, c = 4, hw = 50;
  const auto count = static_cast<std::size_t>(n * c * hw);
  for (bool relu : {false, true}) {
    auto x = uniform_floats(count, -1.0f, 3.0f), w = uniform_floats(4), b = uniform_floats(4);
    auto rm = uniform_floats(4), rv = uniform_floats(4, 0.5f, 2.0f);
    std::vector<float> y(count), mean(4), invstd(4);
    auto t = run_both(ops::BatchNormTrain{n, c, hw, x.data(), w.data(), b.data(), rm.data(), rv.data(), 0.1, 1e-5,
                                          y.data(), mean.data(), invstd.data(), relu});
    for (std::size_t i = 0; i < t.cpu.size(); ++i)
      expect_close(DType::f32, t.cpu[i], t.gpu[i], 1e-5, 1e-5, "batch norm train output " + std::to_string(i));
    auto e = run_both(ops::BatchNormEval{n, c, hw, x.data(), w.data(), b.data(), rm.data(), rv.data(), 1e-5,
                                         y.data(), relu});
    expect_close(DType::f32, e.cpu[0], e.gpu[0], 1e-5, 1e-5, "batch norm eval");
    auto dy = uniform_floats(count);
    std::vector<float> dx(count), dw(4), db(4);
    std::memcpy(y.data(), t.cpu[2].data(), t.cpu[2].size());  // the train pass's y: relu_out
    std::memcpy(mean.data(), t.cpu[3].data(), 16);
    std::memcpy(invstd.data(), t.cpu[4].data(), 16);
    for (bool training : {true, false}) {
      auto bw = run_both(ops::BatchNormBackward{n, c, hw, x.data(), dy.data(), w.data(), mean.data(), invstd.data(),
                                                training, relu ? y.data() : nullptr, dx.data(), dw.data(), db.data()});
      for (std::size_t i = 0; i < bw.cpu.size(); ++i)
        expect_close(DType::f32, bw.cpu[i], bw.gpu[i], 1e-4, 1e-4, "batch norm backward output " + std::to_string(i));
    }
  }
}

TEST_F(CudaBackend, BatchNormOverFewLargeChannelsSplitsAndStillMatches) {
  // Two channels of 200000 elements: the sliced path of the statistics.
  const std::int64_t n = 4, c = 2, hw = 50000;
  const auto count = static_cast<std::size_t>(n * c * hw);
  auto x = uniform_floats(count, 10.0f, 14.0f), w = uniform_floats(2), b = uniform_floats(2);
  auto rm = uniform_floats(2), rv = uniform_floats(2, 0.5f, 2.0f);
  std::vector<float> y(count), mean(2), invstd(2);
  auto t = run_both(ops::BatchNormTrain{n, c, hw, x.data(), w.data(), b.data(), rm.data(), rv.data(), 0.1, 1e-5,
                                        y.data(), mean.data(), invstd.data(), true});
  for (std::size_t i = 0; i < t.cpu.size(); ++i)
    expect_close(DType::f32, t.cpu[i], t.gpu[i], 2e-5, 2e-5, "split batch norm train output " + std::to_string(i));
  std::memcpy(y.data(), t.cpu[2].data(), t.cpu[2].size());
  std::memcpy(mean.data(), t.cpu[3].data(), 8);
  std::memcpy(invstd.data(), t.cpu[4].data(), 8);
  auto dy = uniform_floats(count);
  std::vector<float> dx(count), dw(2), db(2);
  auto bw = run_both(ops::BatchNormBackward{n, c, hw, x.data(), dy.data(), w.data(), mean.data(), invstd.data(), true,
                                            y.data(), dx.data(), dw.data(), db.data()});
  for (std::size_t i = 0; i < bw.cpu.size(); ++i)
    expect_close(DType::f32, bw.cpu[i], bw.gpu[i], 1e-3, 1e-4, "split batch norm backward output " + std::to_string(i));
}

TEST_F(CudaBackend, FusedReluBackwardAndAdamMatchCpu) {
  auto y = uniform_floats(1000), dy = uniform_floats(1000);
  y[3] = 0.0f;
  std::vector<float> dx(1000);
  auto r = run_both(ops::ReluBackward{1000, y.data(), dy.data(), dx.data()});
  expect_bits_equal(r.cpu[0], r.gpu[0], "relu backward");
  auto p = uniform_floats(1000), g = uniform_floats(1000), m = uniform_floats(1000), v = uniform_floats(1000, 0, 1);
  const AdamUpdate u{0.9, 0.999, 1e-8, 1e-3 / (1 - std::pow(0.9, 3)), std::sqrt(1 - std::pow(0.999, 3))};
  auto a = run_both(ops::AdamStep{1000, p.data(), g.data(), m.data(), v.data(), u});
  for (std::size_t i = 0; i < a.cpu.size(); ++i)
    expect_close(DType::f32, a.cpu[i], a.gpu[i], 1e-7, 1e-6, "adam output " + std::to_string(i));
}

}  // namespace
}  // namespace gdrt
