// Reductions: sum, mean, amax/amin, argmax, logsumexp, sum_to.
#include <algorithm>

#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {
namespace {

// Normalised, sorted, unique dims; empty input means every dim.
std::vector<std::int64_t> reduce_dims(const Tensor& x, std::vector<std::int64_t> dims, const char* op) {
  if (dims.empty())
    for (std::int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  for (auto& d : dims) d = normalize_dim(d, x.dim(), op);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

Shape kept_shape(const Tensor& x, const std::vector<std::int64_t>& dims) {
  Shape s = x.shape();
  for (auto d : dims) s[static_cast<std::size_t>(d)] = 1;
  return s;
}

Shape dropped_shape(const Tensor& x, const std::vector<std::int64_t>& dims) {
  Shape s;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) s.push_back(x.shape()[static_cast<std::size_t>(d)]);
  return s;
}

Tensor reduce_raw(ReduceOp op, const Tensor& x, const std::vector<std::int64_t>& dims) {
  Tensor out = make_tensor(kept_shape(x, dims), op == ReduceOp::argmax ? DType::i64 : x.dtype(), x.device());
  if (x.numel() == 0 && op != ReduceOp::sum)
    throw Error("cannot take the max/min of an empty tensor of shape " + shape_str(x.shape()));
  launch(x, ops::Reduce{op, out.kernel_view(), x.kernel_view()});
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<std::int64_t> dims_in, bool keepdim) {
  check_float("sum", x);
  const auto dims = reduce_dims(x, std::move(dims_in), "sum");
  Tensor out = reduce_raw(ReduceOp::sum, x, dims);
  const Shape kept = out.shape(), full_shape = x.shape();
  attach_grad_fn(out, "sum", {&x}, [kept, full_shape](const Tensor& g) {
    return std::vector<Tensor>{g.reshape(kept).expand(full_shape).contiguous()};
  });
  return keepdim ? out : out.reshape(dropped_shape(x, dims));
}

Tensor mean(const Tensor& x, std::vector<std::int64_t> dims_in, bool keepdim) {
  const auto dims = reduce_dims(x, std::move(dims_in), "mean");
  std::int64_t count = 1;
  for (auto d : dims) count *= x.shape()[static_cast<std::size_t>(d)];
  if (count == 0) throw Error("mean of an empty selection of shape " + shape_str(x.shape()));
  return mul(sum(x, dims, keepdim), 1.0 / static_cast<double>(count));
}

static Tensor extreme(ReduceOp op, const char* name, const Tensor& x, std::vector<std::int64_t> dims_in, bool keepdim) {
  check_float(name, x);
  const auto dims = reduce_dims(x, std::move(dims_in), name);
  Tensor out = reduce_raw(op, x, dims);
  attach_grad_fn(out, name, {&x}, [x = x.detach(), out = out.detach(), dims](const Tensor& g) {
    // Gradient shared equally among the elements that attain the extreme.
    Tensor hit = binary_raw(BinaryOp::eq, "amax", x, out).to(x.dtype());
    Tensor count = reduce_raw(ReduceOp::sum, hit, dims);
    return std::vector<Tensor>{mul(hit, div(g.reshape(out.shape()), count))};
  });
  return keepdim ? out : out.reshape(dropped_shape(x, dims));
}
Tensor amax(const Tensor& x, std::vector<std::int64_t> dims, bool keepdim) {
  return extreme(ReduceOp::max, "amax", x, std::move(dims), keepdim);
}
Tensor amin(const Tensor& x, std::vector<std::int64_t> dims, bool keepdim) {
  return extreme(ReduceOp::min, "amin", x, std::move(dims), keepdim);
}

Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  const std::vector<std::int64_t> dims{normalize_dim(dim, x.dim(), "argmax")};
  Tensor out = reduce_raw(ReduceOp::argmax, x, dims);
  attach_non_differentiable(out, "argmax", {&x});
  return keepdim ? out : out.reshape(dropped_shape(x, dims));
}

Tensor logsumexp(const Tensor& x, std::int64_t dim, bool keepdim) {
  check_float("logsumexp", x);
  Tensor m = reduce_raw(ReduceOp::max, x, {normalize_dim(dim, x.dim(), "logsumexp")});  // constant shift, no grad
  Tensor out = add(log(sum(exp(sub(x, m)), {dim}, true)), m);
  return keepdim ? out : out.squeeze(dim);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const std::size_t lead = x.shape().size() - shape.size();
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < x.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1)) dims.push_back(static_cast<std::int64_t>(i));
  Tensor s = dims.empty() ? x : sum(x, dims, true);
  return s.reshape(shape);
}

}  // namespace gdrt
