// One kernel descriptor to the CpuKernels method that computes it.
#include "cpu/cpu_kernels.h"

namespace gdrt::cpu {

void CpuKernels::run(const KernelOp& op) {
  std::visit(Overloaded{
                 [&](const ops::Fill& o) { fill(o.out, o.value); },
                 [&](const ops::Copy& o) { copy(o.out, o.in); },
                 [&](const ops::Unary& o) { unary(o.op, o.out, o.in, o.alpha); },
                 [&](const ops::Binary& o) { binary(o.op, o.out, o.a, o.b); },
                 [&](const ops::Reduce& o) { reduce(o.op, o.out, o.in); },
                 [&](const ops::Random& o) { random(o.out, o.dist, o.seed, o.offset, o.a, o.b); },
                 [&](const ops::Matmul& o) {
                   matmul(o.dtype, o.trans_a, o.trans_b, o.batch, o.m, o.n, o.k, o.a, o.b, o.c, o.beta);
                 },
                 [&](const ops::Conv2dForward& o) { conv2d_forward(o.g, o.x, o.w, o.bias, o.y); },
                 [&](const ops::Conv2dBackwardData& o) { conv2d_backward_data(o.g, o.dy, o.w, o.dx); },
                 [&](const ops::Conv2dBackwardWeight& o) { conv2d_backward_weight(o.g, o.x, o.dy, o.dw, o.db); },
                 [&](const ops::Conv2dBackward& o) { conv2d_backward(o.g, o.x, o.dy, o.w, o.dx, o.dw, o.db); },
                 [&](const ops::MaxPool2dForward& o) { max_pool2d_forward(o.g, o.x, o.y, o.argmax); },
                 [&](const ops::MaxPool2dBackward& o) { max_pool2d_backward(o.g, o.dy, o.argmax, o.dx); },
                 [&](const ops::BatchNormTrain& o) {
                   batch_norm_train(o.n, o.c, o.hw, o.x, o.w, o.b, o.running_mean, o.running_var, o.momentum, o.eps,
                                    o.y, o.save_mean, o.save_invstd, o.relu);
                 },
                 [&](const ops::BatchNormEval& o) {
                   batch_norm_eval(o.n, o.c, o.hw, o.x, o.w, o.b, o.running_mean, o.running_var, o.eps, o.y, o.relu);
                 },
                 [&](const ops::BatchNormBackward& o) {
                   batch_norm_backward(o.n, o.c, o.hw, o.x, o.dy, o.w, o.mean, o.invstd, o.training, o.relu_out,
                                       o.dx, o.dw, o.db);
                 },
                 [&](const ops::ReluBackward& o) { relu_backward(o.n, o.y, o.dy, o.dx); },
                 [&](const ops::AdamStep& o) {
                   adam_update(o.n, o.param, o.grad, o.exp_avg, o.exp_avg_sq, o.u);
                 },
             },
             op);
}

}  // namespace gdrt::cpu
