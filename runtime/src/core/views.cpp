// Views: reshape, permute, slice, select, squeeze/unsqueeze, expand.
// They share storage; their backward maps the gradient back to the base shape.
#include <numeric>

#include "core/impl.h"
#include "gdrt/ops.h"

namespace gdrt {

Tensor Tensor::reshape(Shape target) const {
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) throw Error("reshape: only one dimension may be -1, got " + shape_str(target));
      infer = static_cast<std::int64_t>(i);
    } else {
      known *= target[i];
    }
  }
  if (infer >= 0 && known != 0 && numel() % known == 0) target[static_cast<std::size_t>(infer)] = numel() / known;
  if (shape_numel(target) != numel() || (infer >= 0 && known == 0))
    throw Error("reshape: cannot view shape " + shape_str(shape()) + " (" + std::to_string(numel()) +
                " elements) as " + shape_str(target));
  Tensor base = contiguous();
  Tensor out = make_view(base, target, contiguous_strides(target), base.offset());
  const Shape original = shape();
  attach_grad_fn(out, "reshape", {&base}, [original](const Tensor& g) {
    return std::vector<Tensor>{g.reshape(original)};
  });
  return out;
}

Tensor Tensor::permute(std::vector<std::int64_t> dims) const {
  check_shape(static_cast<std::int64_t>(dims.size()) == dim(), "permute",
              "got " + std::to_string(dims.size()) + " dims for shape " + shape_str(shape()));
  Shape sizes(dims.size()), st(dims.size());
  std::vector<bool> used(dims.size());
  std::vector<std::int64_t> inverse(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(normalize_dim(dims[i], dim(), "permute"));
    if (used[d]) throw Error("permute: dimension " + std::to_string(d) + " repeated");
    used[d] = true;
    sizes[i] = shape()[d];
    st[i] = strides()[d];
    inverse[d] = static_cast<std::int64_t>(i);
  }
  Tensor out = make_view(*this, sizes, st, offset());
  attach_grad_fn(out, "permute", {this}, [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
  return out;
}

Tensor Tensor::transpose(std::int64_t a, std::int64_t b) const {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(dim()));
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[static_cast<std::size_t>(normalize_dim(a, dim(), "transpose"))],
            dims[static_cast<std::size_t>(normalize_dim(b, dim(), "transpose"))]);
  return permute(dims);
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) const {
  d = normalize_dim(d, dim(), "slice");
  const auto n = shape()[static_cast<std::size_t>(d)];
  if (step <= 0) throw Error("slice: step must be positive, got " + std::to_string(step));
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<std::int64_t>(start, 0, n);
  end = std::clamp<std::int64_t>(end, start, n);
  Shape sizes = shape(), st = strides();
  sizes[static_cast<std::size_t>(d)] = (end - start + step - 1) / step;
  st[static_cast<std::size_t>(d)] *= step;
  Tensor out = make_view(*this, sizes, st, offset() + start * strides()[static_cast<std::size_t>(d)]);
  const Shape full_shape = shape();
  attach_grad_fn(out, "slice", {this}, [full_shape, d, start, end, step](const Tensor& g) {
    Tensor grad = zeros(full_shape, TensorOptions{g.dtype(), g.device()});
    grad.slice(d, start, end, step).copy_(g);
    return std::vector<Tensor>{grad};
  });
  return out;
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  d = normalize_dim(d, dim(), "select");
  const auto n = size(d);
  if (index < -n || index >= n)
    throw Error("select: index " + std::to_string(index) + " out of range for dimension " + std::to_string(d) +
                " of shape " + shape_str(shape()));
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  d = normalize_dim(d, dim() + 1, "unsqueeze");
  Shape sizes = shape();
  sizes.insert(sizes.begin() + d, 1);
  return reshape(sizes);
}

Tensor Tensor::squeeze(std::int64_t d) const {
  d = normalize_dim(d, dim(), "squeeze");
  if (size(d) != 1) return *this;
  Shape sizes = shape(), st = strides();
  sizes.erase(sizes.begin() + d);
  st.erase(st.begin() + d);
  Tensor out = make_view(*this, sizes, st, offset());
  const Shape original = shape();
  attach_grad_fn(out, "squeeze", {this}, [original](const Tensor& g) { return std::vector<Tensor>{g.reshape(original)}; });
  return out;
}

Tensor Tensor::expand(Shape target) const {
  check_shape(target.size() >= shape().size(), "expand",
              "cannot expand shape " + shape_str(shape()) + " to fewer dimensions " + shape_str(target));
  const std::size_t lead = target.size() - shape().size();
  Shape st(target.size(), 0);
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (i < lead) continue;
    const auto have = shape()[i - lead];
    if (target[i] == -1) target[i] = have;
    if (have == target[i]) st[i] = strides()[i - lead];
    else if (have != 1)
      throw Error("expand: shape " + shape_str(shape()) + " cannot be broadcast to " + shape_str(target));
  }
  if (target == shape()) return *this;
  Tensor out = make_view(*this, target, st, offset());
  const Shape original = shape();
  attach_grad_fn(out, "expand", {this}, [original](const Tensor& g) { return std::vector<Tensor>{sum_to(g, original)}; });
  return out;
}

}  // namespace gdrt
