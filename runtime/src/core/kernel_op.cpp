#include "gdrt/kernel_op.h"

#include "gdrt/dtype.h"
#include "gdrt/tensor.h"

namespace gdrt {

std::int64_t TensorView::numel() const { return shape_numel(sizes); }

bool TensorView::is_contiguous() const {
  std::int64_t st = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != st) return false;
    st *= sizes[i];
  }
  return true;
}

std::size_t TensorView::extent_bytes() const {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    last += (sizes[i] - 1) * strides[i];
  }
  return static_cast<std::size_t>(last + 1) * itemsize(dtype);
}

const char* kernel_name(const KernelOp& op) {
  // Kernels that compute in float64 say so as a CUDA kernel's template
  // argument would (`<double>`), so that a trace shows where double
  // precision runs on a device (GD002). The other ops are float32 only; a
  // copy converts, whatever its dtypes, and computes nothing.
  const auto named = [](DType dtype, const char* f32, const char* f64) { return dtype == DType::f64 ? f64 : f32; };
  return std::visit(Overloaded{
                        [&](const ops::Fill& o) { return named(o.out.dtype, "gdrt::fill", "gdrt::fill<double>"); },
                        [](const ops::Copy&) { return "gdrt::copy"; },
                        [&](const ops::Unary& o) { return named(o.in.dtype, "gdrt::unary", "gdrt::unary<double>"); },
                        [&](const ops::Binary& o) { return named(o.a.dtype, "gdrt::binary", "gdrt::binary<double>"); },
                        [&](const ops::Reduce& o) { return named(o.in.dtype, "gdrt::reduce", "gdrt::reduce<double>"); },
                        [&](const ops::Random& o) { return named(o.out.dtype, "gdrt::random", "gdrt::random<double>"); },
                        [&](const ops::Matmul& o) { return named(o.dtype, "gdrt::matmul", "gdrt::matmul<double>"); },
                        [](const ops::Conv2dForward&) { return "gdrt::conv2d_forward"; },
                        [](const ops::Conv2dBackwardData&) { return "gdrt::conv2d_backward_data"; },
                        [](const ops::Conv2dBackwardWeight&) { return "gdrt::conv2d_backward_weight"; },
                        [](const ops::Conv2dBackward&) { return "gdrt::conv2d_backward"; },
                        [](const ops::MaxPool2dForward&) { return "gdrt::max_pool2d_forward"; },
                        [](const ops::MaxPool2dBackward&) { return "gdrt::max_pool2d_backward"; },
                        [](const ops::BatchNormTrain&) { return "gdrt::batch_norm_train"; },
                        [](const ops::BatchNormEval&) { return "gdrt::batch_norm_eval"; },
                        [](const ops::BatchNormBackward&) { return "gdrt::batch_norm_backward"; },
                        [](const ops::ReluBackward&) { return "gdrt::relu_backward"; },
                        [](const ops::AdamStep&) { return "gdrt::adam_update"; },
                    },
                    op);
}

}  // namespace gdrt
