// matmul, cat and one_hot.
#include "gdrt/ops.h"
#include "ops/elementwise_util.h"

namespace gdrt {

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const DType dtype = check_binary_dtypes("matmul", a_in, b_in);
  check_float("matmul", a_in);
  const bool batched = a_in.dim() == 3;
  if (!((a_in.dim() == 2 && b_in.dim() == 2) || (a_in.dim() == 3 && b_in.dim() == 3)))
    throw Error("matmul: expected two 2-D or two 3-D tensors, got shapes " + shape_str(a_in.shape()) + " and " +
                shape_str(b_in.shape()));
  const std::int64_t batch = batched ? a_in.size(0) : 1;
  const std::int64_t m = a_in.size(-2), k = a_in.size(-1), n = b_in.size(-1);
  if (b_in.size(-2) != k || (batched && b_in.size(0) != batch))
    throw Error("matmul: shapes " + shape_str(a_in.shape()) + " and " + shape_str(b_in.shape()) +
                " are incompatible (inner dimensions " + std::to_string(k) + " and " +
                std::to_string(b_in.size(-2)) + " must match" + (batched ? ", and the batch sizes" : "") + ")");
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Shape shape = batched ? Shape{batch, m, n} : Shape{m, n};
  Tensor out = make_tensor(shape, dtype, a.device());
  launch(a, ops::Matmul{dtype, false, false, batch, m, n, k, a.data_ptr(), b.data_ptr(), out.data_ptr(), 0.0});
  attach_grad_fn(out, "matmul", {&a_in, &b_in}, [a = a.detach(), b = b.detach()](const Tensor& g) {
    return std::vector<Tensor>{matmul(g, b.transpose(-1, -2)), matmul(a.transpose(-1, -2), g)};
  });
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  if (tensors.empty()) throw Error("cat: needs at least one tensor");
  const Tensor& first = tensors.front();
  dim = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[static_cast<std::size_t>(dim)] = 0;
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) {
    check_binary_dtypes("cat", first, t);
    bool ok = t.dim() == first.dim();
    for (std::int64_t d = 0; ok && d < t.dim(); ++d)
      if (d != dim && t.size(d) != first.size(d)) ok = false;
    if (!ok)
      throw Error("cat along dimension " + std::to_string(dim) + ": shapes " + shape_str(first.shape()) + " and " +
                  shape_str(t.shape()) + " differ outside that dimension");
    shape[static_cast<std::size_t>(dim)] += t.size(dim);
    inputs.push_back(&t);
  }
  Tensor out = make_tensor(shape, first.dtype(), first.device());
  std::vector<std::int64_t> starts;
  std::int64_t at = 0;
  for (const Tensor& t : tensors) {
    starts.push_back(at);
    TensorView dst = out.kernel_view();
    dst.data = static_cast<char*>(dst.data) + at * dst.strides[static_cast<std::size_t>(dim)] *
                                                  static_cast<std::int64_t>(itemsize(out.dtype()));
    dst.sizes[static_cast<std::size_t>(dim)] = t.size(dim);
    launch(out, ops::Copy{dst, t.kernel_view()});
    at += t.size(dim);
  }
  std::vector<std::int64_t> lengths;
  for (const Tensor& t : tensors) lengths.push_back(t.size(dim));
  attach_grad_fn(out, "cat", inputs, [starts, lengths, dim](const Tensor& g) {
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < starts.size(); ++i)
      grads.push_back(g.slice(dim, starts[i], starts[i] + lengths[i]).contiguous());
    return grads;
  });
  return out;
}

Tensor one_hot(const Tensor& labels, std::int64_t classes, std::int64_t class_dim, DType dtype) {
  if (labels.dtype() != DType::i64 && labels.dtype() != DType::i32 && labels.dtype() != DType::u8)
    throw Error("one_hot: labels must be integer class indices, got " + labels.describe());
  if (classes <= 0) throw Error("one_hot: classes must be positive, got " + std::to_string(classes));
  class_dim = normalize_dim(class_dim, labels.dim() + 1, "one_hot");
  Shape ids_shape(static_cast<std::size_t>(labels.dim() + 1), 1);
  ids_shape[static_cast<std::size_t>(class_dim)] = classes;
  Tensor ids = arange(0, static_cast<double>(classes), 1, TensorOptions{labels.dtype(), labels.device()}).reshape(ids_shape);
  return binary_raw(BinaryOp::eq, "one_hot", labels.unsqueeze(class_dim), ids).to(dtype);
}

}  // namespace gdrt
