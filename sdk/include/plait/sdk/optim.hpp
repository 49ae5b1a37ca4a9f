#pragma once
// The optimizer math every data-parallel strategy shares, so that a sharded strategy
// updates its shard with exactly the arithmetic the single-process run uses.
// AdamW follows torch.optim.AdamW (single-tensor path): decoupled weight decay
// p *= 1 - lr*wd, then Adam with bias correction. Clipping follows
// torch.nn.utils.clip_grad_norm_.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/model.hpp"

namespace plait {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
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

// AdamW over whole (unsharded) parameters, the state the single-process strategy and
// replicated data parallel keep: one moment pair per parameter, updated in place.
class WholeParamsAdamW {
 public:
  WholeParamsAdamW() = default;
  WholeParamsAdamW(std::vector<ParamRef> params, const AdamWConfig& config) : params_(std::move(params)), config_(config) {
    for (const auto& p : params_) state_.push_back(adamw_state_like(p.tensor));
  }

  const std::vector<ParamRef>& params() const { return params_; }

  // The squared L2 norms of the gradients, by tensor-parallel kind (this rank's part of
  // the global norm; see grad_norm.hpp).
  template <class Norms>
  Norms squared_grad_norms() const {
    Norms sums;
    for (const auto& p : params_) {
      if (p.tensor.grad().defined()) sums.add(p.split, p.tensor.grad());
    }
    return sums;
  }

  // Scales gradients by clip_coef (when below 1) and updates every parameter that has a
  // gradient. Then the gradients are released as zero_grad(set_to_none=True) does, or,
  // with release = false, kept for the caller to zero (gradients living in buckets).
  void update(int64_t step, double lr, double clip_coef, bool release = true) {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      at::Tensor& param = params_[i].tensor;
      if (!param.grad().defined()) continue;
      at::Tensor grad = param.grad();
      if (clip_coef < 1.0) grad.mul_(clip_coef);
      adamw_update(param, grad, state_[i], step, lr, config_, params_[i].decay);
      if (release) param.mutable_grad() = at::Tensor();
    }
  }

  // One optimizer step when every gradient here is whole and final (single process, or
  // replicated after the all-reduce, no tensor parallel): clip by the global norm,
  // update; returns the norm. Under tensor parallel, get the norm from grad_norm.hpp's
  // global_grad_norm and call update().
  double clip_and_update(int64_t step, double lr, double max_norm, bool release = true) {
    double sum = 0.0;
    for (const auto& p : params_) {
      if (p.tensor.grad().defined()) sum += squared_norm(p.tensor.grad());
    }
    const double norm = std::sqrt(sum);
    update(step, lr, clip_coefficient(norm, max_norm), release);
    return norm;
  }

  std::vector<std::pair<std::string, at::Tensor>> named_grads() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : params_) {
      out.emplace_back(p.name, p.tensor.grad().defined() ? p.tensor.grad().detach().clone() : at::zeros_like(p.tensor));
    }
    return out;
  }

  std::vector<std::pair<std::string, at::Tensor>> named_params() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : params_) out.emplace_back(p.name, p.tensor.detach());
    return out;
  }

  int64_t param_bytes() const {
    int64_t n = 0;
    for (const auto& p : params_) n += static_cast<int64_t>(p.tensor.nbytes());
    return n;
  }
  int64_t state_bytes() const {
    int64_t n = 0;
    for (const auto& s : state_) n += static_cast<int64_t>(s.exp_avg.nbytes() + s.exp_avg_sq.nbytes());
    return n;
  }

 private:
  std::vector<ParamRef> params_;
  AdamWConfig config_;
  std::vector<AdamWState> state_;
};

}  // namespace plait
