#pragma once
// The optimizer math every data-parallel strategy shares, so that a sharded strategy
// updates its shard with exactly the arithmetic the single-process run uses.
// AdamW follows torch.optim.AdamW (single-tensor path): decoupled weight decay
// p *= 1 - lr*wd, then Adam with bias correction. Clipping follows
// torch.nn.utils.clip_grad_norm_.
#include <cmath>
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "plait/sdk/version.hpp"

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
struct PLAIT_ABI_GROWS UpdateArgs {
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

// adamw_update over many tensors at once, through ATen's foreach kernels: the same
// operations in the same order (torch.optim.AdamW's foreach path is this sequence too),
// so the results are bit for bit those of adamw_update, in a handful of kernel launches
// (multi-tensor kernels on CUDA) instead of seven per tensor. `decay[i]`: whether
// weight decay applies to params[i].
struct AdamWTensors {
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  std::vector<bool> decay;

  void add(const at::Tensor& param, const at::Tensor& grad, const AdamWState& state, bool decays) {
    params.push_back(param);
    grads.push_back(grad);
    exp_avgs.push_back(state.exp_avg);
    exp_avg_sqs.push_back(state.exp_avg_sq);
    decay.push_back(decays);
  }
};

inline void adamw_update_all(AdamWTensors& t, int64_t step, double lr, const AdamWConfig& c) {
  if (t.params.empty()) return;
  at::NoGradGuard no_grad;
  if (c.weight_decay != 0.0) {
    std::vector<at::Tensor> decayed;
    for (std::size_t i = 0; i < t.params.size(); ++i) {
      if (t.decay[i]) decayed.push_back(t.params[i]);
    }
    if (!decayed.empty()) at::_foreach_mul_(decayed, 1.0 - lr * c.weight_decay);
  }
  at::_foreach_lerp_(t.exp_avgs, t.grads, 1.0 - c.beta1);
  at::_foreach_mul_(t.exp_avg_sqs, c.beta2);
  at::_foreach_addcmul_(t.exp_avg_sqs, t.grads, t.grads, 1.0 - c.beta2);
  const double bias_correction1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  std::vector<at::Tensor> denom = at::_foreach_sqrt(t.exp_avg_sqs);
  at::_foreach_div_(denom, std::sqrt(bias_correction2));
  at::_foreach_add_(denom, c.eps);
  at::_foreach_addcdiv_(t.params, t.exp_avgs, denom, -lr / bias_correction1);
}

// The factor gradients are scaled by: max_norm / (norm + 1e-6), at most 1.
// max_norm <= 0 turns clipping off.
inline double clip_coefficient(double total_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double coef = max_norm / (total_norm + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

// The squared L2 norm, read to the host: the norm is taken in the tensor's own dtype and
// squared in double. One device-to-host read per call: for tests and host-side figures,
// not for a step's hot path (there, SquaredNorms in grad_norm.hpp keeps sums on the device).
inline double squared_norm(const at::Tensor& t) {
  const double n = at::linalg_vector_norm(t, 2).item<double>();
  return n * n;
}

}  // namespace plait
