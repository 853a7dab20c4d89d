// Every op computed on cpu and on each accelerator device this build has
// (emu:0, cuda:0), compared against cpu, as ggml's test-backend-ops does:
// outputs within a per-op tolerance, no NaN where cpu has none (emu fills
// new memory with NaN, so an element a kernel leaves unwritten shows up),
// and the gradient of sum(y * r) for a random r with respect to every input.
// A device missing from the build or the machine skips, saying why.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "device_compare.h"

namespace gdrt {
namespace {

using test::kExact;
using test::kLoose;
using test::kTight;
using test::Tolerance;
using V = std::vector<Tensor>;

struct OpCase {
  std::string name;
  // The inputs, made on cpu from a seeded generator; the device gets copies.
  std::function<V(Generator&)> inputs;
  // The op; `device` is where creation ops (random, full, arange) make tensors.
  std::function<Tensor(const V&, Device device)> fn;
  Tolerance forward = kTight;
  // No gradient check when unset (comparisons, integer outputs, creation).
  std::optional<Tolerance> grad = kTight;
  // Bit i: floating input i requires grad.
  unsigned grad_inputs = ~0u;
};

// Failing tests name their case rather than dump its bytes.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// Inputs drawn from N(0, 1), one per shape.
std::function<V(Generator&)> normal(std::vector<Shape> shapes) {
  return [shapes](Generator& g) {
    V v;
    for (const Shape& s : shapes) v.push_back(randn(s, g));
    return v;
  };
}
// Inputs drawn from U[low, high): for ops defined only there (log, sqrt, div).
std::function<V(Generator&)> uniform_in(std::vector<Shape> shapes, double low, double high) {
  return [shapes, low, high](Generator& g) {
    V v;
    for (const Shape& s : shapes) v.push_back(uniform(s, low, high, g));
    return v;
  };
}
// Small integers as floats: comparisons then see ties, rounding sees halves.
std::function<V(Generator&)> integral(std::vector<Shape> shapes) {
  return [shapes](Generator& g) {
    V v;
    for (const Shape& s : shapes) v.push_back(floor(mul(randn(s, g), 2.0)));
    return v;
  };
}
V none(Generator&) { return {}; }

void add_elementwise(std::vector<OpCase>& c) {
  // Broadcasting binary ops.
  c.push_back({"add_bcast", normal({{3, 4, 5}, {4, 1}}), [](const V& v, Device) { return add(v[0], v[1]); }});
  c.push_back({"sub_bcast", normal({{2, 3, 4}, {3, 1}}), [](const V& v, Device) { return sub(v[0], v[1]); }});
  c.push_back({"mul_bcast_both", normal({{4, 1, 5}, {3, 1}}), [](const V& v, Device) { return mul(v[0], v[1]); }});
  c.push_back({"div_bcast",
               [](Generator& g) { return V{randn({3, 4}, g), uniform({4}, 0.5, 2.0, g)}; },
               [](const V& v, Device) { return div(v[0], v[1]); }});
  c.push_back({"maximum", normal({{3, 4}, {1, 4}}), [](const V& v, Device) { return maximum(v[0], v[1]); }});
  c.push_back({"minimum", normal({{3, 4}, {3, 1}}), [](const V& v, Device) { return minimum(v[0], v[1]); }});
  c.push_back({"pow3", normal({{3, 4}}), [](const V& v, Device) { return pow(v[0], 3.0); }});
  c.push_back({"pow_half", uniform_in({{3, 4}}, 0.5, 2.0), [](const V& v, Device) { return pow(v[0], 0.5); }});
  c.push_back({"scalar_ops", uniform_in({{3, 4}}, 0.5, 2.0), [](const V& v, Device) {
                 return add(add(mul(add(v[0], 1.5), -2.0), rsub(1.0, v[0])), rdiv(2.0, v[0]));
               }});
  c.push_back({"operators", uniform_in({{2, 3}, {3}}, 0.5, 2.0), [](const V& v, Device) {
                 return (v[0] + v[1]) * v[0] - v[1] / v[0] + (-v[1]) * 0.5 + (3.0 - v[0]) / 2.0 + 1.0 * v[1];
               }});
  // Non-contiguous inputs: permuted, sliced with a step, expanded, selected.
  c.push_back({"add_permuted", normal({{2, 3, 4}, {4, 2, 3}}),
               [](const V& v, Device) { return add(v[0].permute({2, 0, 1}), v[1]); }});
  c.push_back({"mul_sliced", normal({{4, 6}, {4, 3}}),
               [](const V& v, Device) { return mul(v[0].slice(1, 0, 6, 2), v[1]); }});
  c.push_back({"sub_expanded", normal({{3, 1}, {3, 5}}),
               [](const V& v, Device) { return sub(v[0].expand({3, 5}), v[1]); }});
  c.push_back({"div_both_strided",
               [](Generator& g) { return V{randn({5, 4}, g), uniform({8, 5}, 0.5, 2.0, g)}; },
               [](const V& v, Device) { return div(v[0].transpose(0, 1), v[1].slice(0, 1, 8, 2)); }});
  c.push_back({"select_unsqueeze", normal({{3, 4, 2}}),
               [](const V& v, Device) { return mul(v[0].select(1, 2).unsqueeze(0).squeeze(0), 3.0); }});
  c.push_back({"exp_transposed", normal({{4, 5}}), [](const V& v, Device) { return exp(v[0].transpose(0, 1)); }});
  c.push_back({"views_reshape", normal({{2, 3, 4}}), [](const V& v, Device) {
                 return mul(v[0].permute({0, 2, 1}).slice(1, 1, 3).reshape({-1}), 2.0);
               }});
  // Unary math and activations.
  c.push_back({"neg", normal({{3, 4}}), [](const V& v, Device) { return neg(v[0]); }});
  c.push_back({"exp", normal({{3, 4}}), [](const V& v, Device) { return exp(v[0]); }});
  c.push_back({"log", uniform_in({{3, 4}}, 0.5, 3.0), [](const V& v, Device) { return log(v[0]); }});
  c.push_back({"log1p", uniform_in({{3, 4}}, 0.0, 2.0), [](const V& v, Device) { return log1p(v[0]); }});
  c.push_back({"abs", normal({{3, 4}}), [](const V& v, Device) { return abs(v[0]); }});
  c.push_back({"sqrt", uniform_in({{3, 4}}, 0.5, 3.0), [](const V& v, Device) { return sqrt(v[0]); }});
  c.push_back({"square", normal({{3, 4}}), [](const V& v, Device) { return square(v[0]); }});
  c.push_back({"clamp_min", normal({{3, 4}}), [](const V& v, Device) { return clamp_min(v[0], 0.1); }});
  c.push_back({"relu", normal({{3, 4}}), [](const V& v, Device) { return relu(v[0]); }});
  c.push_back({"relu_strided", normal({{4, 6}}), [](const V& v, Device) { return relu(v[0].transpose(0, 1)); }});
  c.push_back({"leaky_relu", normal({{3, 4}}), [](const V& v, Device) { return leaky_relu(v[0], 0.1); }});
  c.push_back({"sigmoid", normal({{3, 4}}), [](const V& v, Device) { return sigmoid(v[0]); }});
  c.push_back({"silu", normal({{3, 4}}), [](const V& v, Device) { return silu(v[0]); }});
  c.push_back({"tanh", normal({{3, 4}}), [](const V& v, Device) { return tanh(v[0]); }});
  c.push_back({"softmax_dim1", normal({{2, 5, 3}}), [](const V& v, Device) { return softmax(v[0], 1); }});
  c.push_back({"softmax_last", normal({{2, 5, 3}}), [](const V& v, Device) { return softmax(v[0], -1); }});
  c.push_back({"log_softmax_dim0", normal({{4, 3}}), [](const V& v, Device) { return log_softmax(v[0], 0); }});
  c.push_back({"dropout", normal({{4, 8}}), [](const V& v, Device) {
                 Generator g(11);
                 return dropout(v[0], 0.3, true, g);
               }, kExact, kExact});
  // Without gradient: exact everywhere.
  c.push_back({"sign", integral({{3, 4}}), [](const V& v, Device) { return sign(v[0]); }, kExact, {}});
  c.push_back({"round", normal({{3, 4}}), [](const V& v, Device) { return round(mul(v[0], 3.0)); }, kExact, {}});
  c.push_back({"floor", normal({{3, 4}}), [](const V& v, Device) { return floor(mul(v[0], 3.0)); }, kExact, {}});
  c.push_back({"gt", integral({{3, 4}, {4}}), [](const V& v, Device) { return gt(v[0], v[1]); }, kExact, {}});
  c.push_back({"lt", integral({{3, 4}, {3, 1}}), [](const V& v, Device) { return lt(v[0], v[1]); }, kExact, {}});
  c.push_back({"eq", integral({{3, 4}, {4}}), [](const V& v, Device) { return eq(v[0], v[1]); }, kExact, {}});
  c.push_back({"gt_scalar", integral({{3, 4}}), [](const V& v, Device) { return gt(v[0], 0.0); }, kExact, {}});
  c.push_back({"lt_scalar", integral({{3, 4}}), [](const V& v, Device) { return lt(v[0], 1.0); }, kExact, {}});
}

void add_reductions(std::vector<OpCase>& c) {
  for (std::int64_t d = 0; d < 3; ++d)
    for (bool keep : {false, true}) {
      const std::string suffix = "_dim" + std::to_string(d) + (keep ? "_keep" : "");
      c.push_back({"sum" + suffix, normal({{3, 4, 5}}), [d, keep](const V& v, Device) { return sum(v[0], {d}, keep); },
                   kLoose, kTight});
      c.push_back({"mean" + suffix, normal({{3, 4, 5}}),
                   [d, keep](const V& v, Device) { return mean(v[0], {d}, keep); }, kLoose, kTight});
      c.push_back({"amax" + suffix, normal({{3, 4, 5}}),
                   [d, keep](const V& v, Device) { return amax(v[0], {d}, keep); }, kExact, kExact});
      c.push_back({"amin" + suffix, normal({{3, 4, 5}}),
                   [d, keep](const V& v, Device) { return amin(v[0], {d}, keep); }, kExact, kExact});
      c.push_back({"argmax" + suffix, normal({{3, 4, 5}}),
                   [d, keep](const V& v, Device) { return argmax(v[0], d, keep); }, kExact, {}});
      c.push_back({"logsumexp" + suffix, normal({{3, 4, 5}}),
                   [d, keep](const V& v, Device) { return logsumexp(v[0], d, keep); }, kLoose, kTight});
    }
  c.push_back({"sum_all", normal({{3, 4, 5}}), [](const V& v, Device) { return sum(v[0]); }, kLoose, kTight});
  c.push_back({"mean_two_dims_keep", normal({{3, 4, 5}}), [](const V& v, Device) { return mean(v[0], {0, 2}, true); },
               kLoose, kTight});
  c.push_back({"amax_all", normal({{3, 4, 5}}), [](const V& v, Device) { return amax(v[0]); }, kExact, kExact});
  c.push_back({"sum_permuted", normal({{3, 4, 5}}),
               [](const V& v, Device) { return sum(v[0].permute({2, 0, 1}), {1}); }, kLoose, kTight});
  c.push_back({"sum_to", normal({{3, 4, 5}}), [](const V& v, Device) { return sum_to(v[0], {4, 1}); }, kLoose,
               kTight});
  c.push_back({"sum_f64", [](Generator& g) { return V{randn({3, 4, 5}, g, TensorOptions{}.with_dtype(DType::f64))}; },
               [](const V& v, Device) { return sum(v[0], {1}); }, kLoose, kTight});
}

void add_linear_algebra(std::vector<OpCase>& c) {
  c.push_back({"matmul", normal({{3, 5}, {5, 4}}), [](const V& v, Device) { return matmul(v[0], v[1]); }, kLoose,
               kLoose});
  c.push_back({"matmul_batched", normal({{2, 3, 5}, {2, 5, 4}}), [](const V& v, Device) { return matmul(v[0], v[1]); },
               kLoose, kLoose});
  c.push_back({"matmul_transposed", normal({{5, 3}, {4, 5}}),
               [](const V& v, Device) { return matmul(v[0].transpose(0, 1), v[1].transpose(0, 1)); }, kLoose, kLoose});
  c.push_back({"matmul_f64",
               [](Generator& g) {
                 const auto f64 = TensorOptions{}.with_dtype(DType::f64);
                 return V{randn({2, 3, 5}, g, f64), randn({2, 5, 4}, g, f64)};
               },
               [](const V& v, Device) { return matmul(v[0], v[1]); }, kLoose, kLoose});
  // Convolutions: stride, padding, dilation, with and without bias.
  c.push_back({"conv_s2p1_bias", normal({{2, 3, 7, 7}, {4, 3, 3, 3}, {4}}),
               [](const V& v, Device) { return conv2d(v[0], v[1], v[2], {2, 1, 1}); }, kLoose, kLoose});
  c.push_back({"conv_d2p2", normal({{2, 3, 8, 8}, {4, 3, 3, 3}}),
               [](const V& v, Device) { return conv2d(v[0], v[1], {}, {1, 2, 2}); }, kLoose, kLoose});
  c.push_back({"conv_p1_nonsquare", normal({{2, 3, 7, 5}, {5, 3, 3, 3}, {5}}),
               [](const V& v, Device) { return conv2d(v[0], v[1], v[2], {1, 1, 1}); }, kLoose, kLoose});
  c.push_back({"conv_1x1_bias", normal({{2, 4, 5, 5}, {3, 4, 1, 1}, {3}}),
               [](const V& v, Device) { return conv2d(v[0], v[1], v[2]); }, kLoose, kLoose});
  c.push_back({"conv_permuted_input", normal({{2, 6, 6, 3}, {4, 3, 3, 3}}),
               [](const V& v, Device) { return conv2d(v[0].permute({0, 3, 1, 2}), v[1], {}, {1, 1, 1}); }, kLoose,
               kLoose});
  c.push_back({"convT_k2s2_bias", normal({{2, 4, 4, 4}, {4, 3, 2, 2}, {3}}),
               [](const V& v, Device) { return conv_transpose2d(v[0], v[1], v[2], {2, 0, 1}); }, kLoose, kLoose});
  c.push_back({"convT_k3s2p1op1", normal({{2, 4, 4, 4}, {4, 3, 3, 3}}),
               [](const V& v, Device) { return conv_transpose2d(v[0], v[1], {}, {2, 1, 1}, 1); }, kLoose, kLoose});
  // Pooling routes values: exact, and so is the gradient of disjoint windows.
  c.push_back({"maxpool_k2", normal({{2, 3, 6, 6}}), [](const V& v, Device) { return max_pool2d(v[0], 2); }, kExact,
               kExact});
  c.push_back({"maxpool_k3s2p1", normal({{2, 3, 7, 7}}), [](const V& v, Device) { return max_pool2d(v[0], 3, 2, 1); },
               kExact, kTight});
  c.push_back({"maxpool_permuted", normal({{2, 6, 6, 3}}),
               [](const V& v, Device) { return max_pool2d(v[0].permute({0, 3, 1, 2}), 2); }, kExact, kExact});
}

// Batch norm's output followed by the running statistics it updated, so
// both are compared (the statistics carry no gradient).
Tensor bn_case(const V& v, Device device, bool training, bool relu, bool affine) {
  const std::int64_t c = v[0].size(1);
  Generator g(5);
  Tensor rm = randn({c}, g).to(device), rv = uniform({c}, 0.5, 2.0, g).to(device);
  const Tensor w = affine ? v[1] : Tensor(), b = affine ? v[2] : Tensor();
  Tensor y = relu ? batch_norm_relu(v[0], w, b, rm, rv, training, 0.1, 1e-5)
                  : batch_norm(v[0], w, b, rm, rv, training, 0.1, 1e-5);
  return cat({y.reshape({-1}), rm, rv}, 0);
}

void add_normalisation(std::vector<OpCase>& c) {
  for (bool training : {true, false})
    for (bool relu : {false, true}) {
      const std::string name = std::string("bn_") + (training ? "train" : "eval") + (relu ? "_relu" : "");
      c.push_back({name, normal({{3, 4, 5, 5}, {4}, {4}}),
                   [training, relu](const V& v, Device d) { return bn_case(v, d, training, relu, true); }, kLoose,
                   kLoose});
    }
  c.push_back({"bn_train_2d", normal({{6, 4}, {4}, {4}}),
               [](const V& v, Device d) { return bn_case(v, d, true, false, true); }, kLoose, kLoose});
  c.push_back({"bn_train_no_affine", normal({{3, 4, 3, 3}}),
               [](const V& v, Device d) { return bn_case(v, d, true, true, false); }, kLoose, kLoose});
}

void add_shape_and_creation(std::vector<OpCase>& c) {
  c.push_back({"cat_dim0", normal({{2, 3}, {4, 3}}), [](const V& v, Device) { return cat({v[0], v[1]}, 0); }, kExact,
               kExact});
  c.push_back({"cat_dim1_strided", normal({{2, 3, 4}, {4, 2, 2}}),
               [](const V& v, Device) { return cat({v[0], v[1].permute({1, 2, 0})}, 1); }, kExact, kExact});
  c.push_back({"cat_three_last", normal({{2, 3, 1}, {2, 3, 4}, {2, 3, 2}}),
               [](const V& v, Device) { return cat({v[0], v[1], v[2]}, 2); }, kExact, kExact});
  c.push_back({"clone_permuted", normal({{2, 3, 4}}), [](const V& v, Device) { return v[0].permute({1, 2, 0}).clone(); },
               kExact, kExact});
  c.push_back({"contiguous_expanded", normal({{3, 1}}),
               [](const V& v, Device) { return v[0].expand({2, 3, 4}).contiguous(); }, kExact, kExact});
  c.push_back({"full", none, [](const V&, Device d) { return full({3, 5}, -2.5, TensorOptions{}.with_device(d)); },
               kExact, {}});
  c.push_back({"zeros_ones_i64", none,
               [](const V&, Device d) {
                 const auto o = TensorOptions{}.with_device(d).with_dtype(DType::i64);
                 return cat({zeros({4}, o), ones({3}, o)}, 0);
               },
               kExact, {}});
  c.push_back({"arange", none, [](const V&, Device d) { return arange(-3, 7, 0.5, TensorOptions{}.with_device(d)); },
               kExact, {}});
  c.push_back({"fill_slice", none,
               [](const V&, Device d) {
                 Tensor t = zeros({4, 6}, TensorOptions{}.with_device(d));
                 t.slice(1, 1, 6, 2).fill_(7.0);
                 return t;
               },
               kExact, {}});
  c.push_back({"copy_into_slice", normal({{3, 2}}),
               [](const V& v, Device d) {
                 Tensor t = zeros({4, 3}, TensorOptions{}.with_device(d));
                 t.slice(0, 1, 3).copy_(v[0].detach().transpose(0, 1));
                 return t;
               },
               kExact, {}});
  c.push_back({"one_hot",
               [](Generator& g) { return V{floor(mul(rand({2, 5}, g), 3.99)).to(DType::i64)}; },
               [](const V& v, Device) { return one_hot(v[0], 4, 1); }, kExact, {}});
}

// Conversions between every pair of dtypes. Values are non-negative and
// below 256 where u8 is involved (a negative float to u8 is undefined), and
// small enough for f16 to hold them exactly.
void add_conversions(std::vector<OpCase>& c) {
  const DType all[] = {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean};
  const char* names[] = {"f32", "f64", "f16", "i32", "i64", "u8", "bool"};
  for (int s = 0; s < 7; ++s)
    for (int t = 0; t < 7; ++t) {
      if (s == t) continue;
      const DType from = all[s], to = all[t];
      const bool unsigned_involved = from == DType::u8 || to == DType::u8;
      c.push_back({std::string("to_") + names[s] + "_" + names[t],
                   [from, unsigned_involved](Generator& g) {
                     Tensor x = unsigned_involved ? mul(rand({3, 7}, g), 200.0) : mul(randn({3, 7}, g), 50.0);
                     // Quarters (exact in f16, truncated by integers) and many exact
                     // zeros, so a conversion to bool has both values to get right.
                     x = mul(mul(round(mul(x, 4.0)), 0.25), gt(rand({3, 7}, g), 0.5).to(DType::f32));
                     return V{x.to(from)};
                   },
                   [to](const V& v, Device) { return v[0].to(to); }, kExact, {}});
    }
  c.push_back({"to_f64_and_back_grad", normal({{3, 4}}),
               [](const V& v, Device) { return mul(v[0].to(DType::f64), 2.0).to(DType::f32); },
               kExact, kExact});
  c.push_back({"to_strided_f16", normal({{4, 6}}),
               [](const V& v, Device) { return v[0].transpose(0, 1).slice(0, 0, 6, 2).to(DType::f16); }, kExact, {}});
}

// Counter-based generators: the same seed gives the same numbers everywhere.
void add_random(std::vector<OpCase>& c) {
  c.push_back({"rand", none, [](const V&, Device d) {
                 Generator g(42);
                 return rand({5, 7}, g, TensorOptions{}.with_device(d));
               }, kExact, {}});
  c.push_back({"randn", none, [](const V&, Device d) {
                 Generator g(42);
                 return randn({5, 7}, g, TensorOptions{}.with_device(d));
               }, kTight, {}});
  c.push_back({"uniform_f64_second_draw", none, [](const V&, Device d) {
                 Generator g(7);
                 const auto o = TensorOptions{}.with_device(d).with_dtype(DType::f64);
                 (void)uniform({13}, -2, 3, g, o);
                 return uniform({4, 5}, -2, 3, g, o);
               }, kExact, {}});
  c.push_back({"randn_f64_offset", none, [](const V&, Device d) {
                 Generator g(3);
                 g.advance(1001);
                 return randn({33}, g, TensorOptions{}.with_device(d).with_dtype(DType::f64));
               }, kTight, {}});
}

void add_losses(std::vector<OpCase>& c) {
  auto logits_and_mask = [](Generator& g) {
    return V{randn({2, 1, 4, 4}, g), gt(rand({2, 1, 4, 4}, g), 0.5).to(DType::f32)};
  };
  c.push_back({"bce_with_logits", logits_and_mask,
               [](const V& v, Device) { return binary_cross_entropy_with_logits(v[0], v[1]); }, kLoose, kTight});
  c.push_back({"dice", logits_and_mask, [](const V& v, Device) { return dice_loss(v[0], v[1]); }, kLoose, kTight});
  c.push_back({"mse", normal({{3, 5}, {3, 5}}), [](const V& v, Device) { return mse_loss(v[0], v[1]); }, kLoose,
               kTight});
  c.push_back({"cross_entropy",
               [](Generator& g) { return V{randn({4, 3, 2, 2}, g), floor(mul(rand({4, 2, 2}, g), 2.99)).to(DType::i64)}; },
               [](const V& v, Device) { return cross_entropy(v[0], v[1]); }, kLoose, kTight, 1u});
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> c;
  add_elementwise(c);
  add_reductions(c);
  add_linear_algebra(c);
  add_normalisation(c);
  add_shape_and_creation(c);
  add_conversions(c);
  add_random(c);
  add_losses(c);
  return c;
}

class DeviceOp : public ::testing::TestWithParam<std::tuple<Device, OpCase>> {
 protected:
  void SetUp() override {
    if (auto why = test::device_unavailable(std::get<0>(GetParam()))) GTEST_SKIP() << *why;
  }
};

TEST_P(DeviceOp, MatchesCpu) {
  const auto& [device, c] = GetParam();
  Generator gen(1234);
  V cpu_in = c.inputs(gen);
  V dev_in;
  for (std::size_t i = 0; i < cpu_in.size(); ++i) {
    dev_in.push_back(cpu_in[i].to(device));
    if (c.grad && is_floating(cpu_in[i].dtype()) && cpu_in[i].dtype() != DType::f16 && (c.grad_inputs >> i & 1u)) {
      cpu_in[i].requires_grad_();
      dev_in[i].requires_grad_();
    }
  }
  const Tensor expected = c.fn(cpu_in, cpu_device());
  const Tensor actual = c.fn(dev_in, device);
  ASSERT_TRUE(test::matches_cpu(actual, expected, device, c.forward)) << c.name << " forward";
  if (!c.grad) return;
  ASSERT_TRUE(expected.requires_grad()) << c.name << " has no gradient on cpu; mark the case as without one";
  ASSERT_TRUE(actual.requires_grad()) << c.name << " lost its gradient history on " << device.str();
  Generator rgen(99);
  const Tensor r = randn(expected.shape(), rgen).to(expected.dtype());
  sum(mul(expected, r)).backward();
  sum(mul(actual, r.to(device))).backward();
  for (std::size_t i = 0; i < cpu_in.size(); ++i) {
    if (!cpu_in[i].requires_grad()) continue;
    EXPECT_TRUE(test::matches_cpu(dev_in[i].grad(), cpu_in[i].grad(), device, *c.grad))
        << c.name << " gradient of input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, DeviceOp,
                         ::testing::Combine(::testing::ValuesIn(test::accelerator_devices()),
                                            ::testing::ValuesIn(all_cases())),
                         [](const auto& info) {
                           return test::device_label(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace gdrt
