// The cuda backend's own kernels (the .cu files), one launcher per op of
// gdrt/kernel_op.h that cuBLAS and cuDNN do not cover. Each queues its work
// on ctx.stream and returns; semantics are the cpu backend's, element for
// element (runtime/src/cpu), so results agree within float rounding.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "gdrt/kernel_op.h"

namespace gdrt::cuda {

// Temporary device memory for one launch, ordered on its stream: released
// after the launch is queued, it is reused only by later work there.
class Scratch {
 public:
  virtual ~Scratch() = default;
  virtual void* get(std::size_t bytes) = 0;
};

struct LaunchContext {
  cudaStream_t stream;
  int sm_count;      // bounds grid-stride grids to a few waves
  Scratch* scratch;  // null: kernels make do without temporaries
};

void fill(const LaunchContext& ctx, const TensorView& out, double value);
void copy(const LaunchContext& ctx, const TensorView& out, const TensorView& in);
void unary(const LaunchContext& ctx, UnaryOp op, const TensorView& out, const TensorView& in, double alpha);
void binary(const LaunchContext& ctx, BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b);
void reduce(const LaunchContext& ctx, ReduceOp op, const TensorView& out, const TensorView& in);
void random(const LaunchContext& ctx, const ops::Random& op);
void max_pool2d_forward(const LaunchContext& ctx, const ops::MaxPool2dForward& op);
void max_pool2d_backward(const LaunchContext& ctx, const ops::MaxPool2dBackward& op);
void batch_norm_train(const LaunchContext& ctx, const ops::BatchNormTrain& op);
void batch_norm_eval(const LaunchContext& ctx, const ops::BatchNormEval& op);
void batch_norm_backward(const LaunchContext& ctx, const ops::BatchNormBackward& op);
void relu_backward(const LaunchContext& ctx, const ops::ReluBackward& op);
void adam_step(const LaunchContext& ctx, const ops::AdamStep& op);

}  // namespace gdrt::cuda
