// The fused optimiser update, one element at a time.
#pragma once

#include <cmath>

#include "gdrt/kernel_op.h"
#include "ops/host_device.h"

namespace gdrt::scalar {

// AdamUpdate's factors in float, the precision the update runs in.
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bias_correction2_sqrt;
};

inline AdamScalars adam_scalars(const AdamUpdate& u) {
  return {static_cast<float>(u.beta1), static_cast<float>(1.0 - u.beta1),    static_cast<float>(u.beta2),
          static_cast<float>(1.0 - u.beta2), static_cast<float>(u.eps), static_cast<float>(u.step_size),
          static_cast<float>(u.bias_correction2_sqrt)};
}

// Adam (and AdamW, whose decay is applied before): the moments, then the
// parameter, p -= step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
GDRT_HOST_DEVICE inline void adam_update(float& param, float grad, float& exp_avg, float& exp_avg_sq,
                                         const AdamScalars& s) {
  const float m = mul_rn(exp_avg, s.beta1) + mul_rn(grad, s.one_minus_beta1);
  const float v = mul_rn(exp_avg_sq, s.beta2) + mul_rn(s.one_minus_beta2 * grad, grad);
  exp_avg = m;
  exp_avg_sq = v;
  param -= mul_rn(s.step_size, m / (std::sqrt(v) / s.bias_correction2_sqrt + s.eps));
}

}  // namespace gdrt::scalar
