// The two CPU convolution implementations behind CpuKernels' conv methods.
#pragma once

#include "cpu/cpu_kernels.h"

namespace gdrt::cpu {

void im2col_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y);
void im2col_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx);
void im2col_conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db);

// oneDNN; each returns false when the geometry is one it does not take.
bool dnnl_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y);
bool dnnl_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx);
bool dnnl_conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db);
bool dnnl_conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx, float* dw,
                          float* db);

enum class ConvImpl { onednn, im2col };
// GDRT_CPU_CONV=im2col|onednn selects the implementation (default onednn).
ConvImpl conv_impl();

}  // namespace gdrt::cpu
