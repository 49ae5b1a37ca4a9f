#pragma once
// The optimizer math every data-parallel strategy shares, so that a sharded strategy
// updates its shard with exactly the arithmetic the single-process run uses.
// AdamW follows torch.optim.AdamW (single-tensor path): decoupled weight decay
// p *= 1 - lr*wd, then Adam with bias correction. Clipping follows
// torch.nn.utils.clip_grad_norm_.
#include <cmath>
#include <cstdint>

#include <ATen/ATen.h>

namespace plait {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

// One update as the core asks for it (data_parallel.hpp): AdamW's step counts the updates
// applied so far, from 1 (a skipped step does not count); the gradients are scaled by
// clip_coef first when it is below 1.
struct UpdateArgs {
  int64_t step = 1;
  double lr = 0.0;
  double clip_coef = 1.0;
};

struct AdamWState {
  at::Tensor exp_avg;
  at::Tensor exp_avg_sq;
};

inline AdamWState adamw_state_like(const at::Tensor& param) {
  return {at::zeros_like(param), at::zeros_like(param)};
}

// step counts from 1.
inline void adamw_update(at::Tensor& param, const at::Tensor& grad, AdamWState& state,
                         int64_t step, double lr, const AdamWConfig& c, bool decay) {
  at::NoGradGuard no_grad;
  if (decay && c.weight_decay != 0.0) param.mul_(1.0 - lr * c.weight_decay);
  state.exp_avg.lerp_(grad, 1.0 - c.beta1);
  state.exp_avg_sq.mul_(c.beta2).addcmul_(grad, grad, 1.0 - c.beta2);
  const double bias_correction1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  const double step_size = lr / bias_correction1;
  at::Tensor denom = (state.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(c.eps);
  param.addcdiv_(state.exp_avg, denom, -step_size);
}

// The factor gradients are scaled by: max_norm / (norm + 1e-6), at most 1.
// max_norm <= 0 turns clipping off.
inline double clip_coefficient(double total_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double coef = max_norm / (total_norm + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

// Sum of squared L2 norms, accumulated in float64 whatever the gradient dtype.
inline double squared_norm(const at::Tensor& t) {
  const double n = at::linalg_vector_norm(t, 2).item<double>();
  return n * n;
}

}  // namespace plait
