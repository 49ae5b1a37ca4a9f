#pragma once
// AdamW over whole parameters and whole gradients: the state of the single-process
// strategy, of replicated data parallel, and of any plugin built like them. One moment
// pair per parameter, updated in place with the single process's arithmetic (optim.hpp).
// It also does what such a plugin owes tensor and pipeline parallelism, so that each
// plugin does not write it again: the gradients that are partial over tp are summed once
// per step (partial_grads.hpp), and the global norm sums the squares where they are
// spread (grad_norm.hpp). Data-parallel gradients must be reduced before grad_norm().
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/grad_norm.hpp"
#include "plait/sdk/model.hpp"
#include "plait/sdk/optim.hpp"
#include "plait/sdk/partial_grads.hpp"
#include "plait/sdk/state.hpp"

namespace plait {

struct ReplicatedAdamWSetup {
  std::vector<ParamRef> params;
  AdamWConfig adamw;
  Communicator* tp_group = nullptr;  // null without tensor parallel
  Communicator* pp_group = nullptr;  // null without a pipeline
  std::string plugin;                // tags its collectives and names it in errors
  // After an update, drop each gradient as zero_grad(set_to_none=True) does; false keeps
  // them for their owner to zero (gradients that are views of ddp's buckets).
  bool release_grads = true;
};

class ReplicatedAdamW {
 public:
  ReplicatedAdamW() = default;
  explicit ReplicatedAdamW(ReplicatedAdamWSetup setup) : s_(std::move(setup)) {
    for (const auto& p : s_.params) state_.push_back(adamw_state_like(p.tensor));
  }

  const std::vector<ParamRef>& params() const { return s_.params; }

  // After the step's last backward: sums the gradients that are partial over tp.
  void sum_partial_grads() {
    if (s_.params.empty()) return;
    sum_over_tp(partial_grads(s_.params, s_.plugin), s_.tp_group, s_.params.front().tensor.device(), s_.plugin);
  }

  // The global norm of the gradients (collective over tp and pp).
  GradNorm grad_norm() const {
    SquaredNorms sums;
    for (const auto& p : s_.params) {
      if (p.tensor.grad().defined()) sums.add(p.split, p.tensor.grad());
    }
    const at::TensorOptions options = s_.params.empty() ? at::TensorOptions() : s_.params.front().tensor.options();
    return global_grad_norm(sums, nullptr, s_.tp_group, s_.pp_group, options, s_.plugin);
  }

  // Scales the gradients by clip_coef (when below 1) and updates every parameter that
  // has a gradient, then releases the gradients (or leaves them, see release_grads).
  void update(const UpdateArgs& args) {
    at::NoGradGuard no_grad;
    AdamWTensors all;
    for (std::size_t i = 0; i < s_.params.size(); ++i) {
      at::Tensor& param = s_.params[i].tensor;
      if (param.grad().defined()) all.add(param, param.grad(), state_[i], s_.params[i].decay);
    }
    if (args.clip_coef < 1.0 && !all.grads.empty()) at::_foreach_mul_(all.grads, args.clip_coef);
    adamw_update_all(all, args.step, args.lr, s_.adamw);
    discard();
  }

  // The step's gradients go as an update's would; parameters and moments stay.
  void discard() {
    if (!s_.release_grads) return;
    for (auto& p : s_.params) p.tensor.mutable_grad() = at::Tensor();
  }

  std::vector<std::pair<std::string, at::Tensor>> named_grads() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : s_.params) {
      out.emplace_back(p.name, p.tensor.grad().defined() ? p.tensor.grad().detach().clone() : at::zeros_like(p.tensor));
    }
    return out;
  }

  std::vector<std::pair<std::string, at::Tensor>> named_params() const {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : s_.params) out.emplace_back(p.name, p.tensor.detach());
    return out;
  }

  // Every parameter and both moments, whole: held alike by `replicas` data-parallel
  // ranks (1: this rank alone), of which this is `replica`.
  std::vector<StatePart> state_parts(int replicas = 1, int replica = 0) const {
    std::vector<StatePart> out;
    for (std::size_t i = 0; i < s_.params.size(); ++i) {
      const std::string& name = s_.params[i].name;
      out.push_back({name, state_kind::param, 0, s_.params[i].tensor.detach(), replicas, replica});
      out.push_back({name, state_kind::exp_avg, 0, state_[i].exp_avg, replicas, replica});
      out.push_back({name, state_kind::exp_avg_sq, 0, state_[i].exp_avg_sq, replicas, replica});
    }
    return out;
  }
  void load_state(StateSource& source) {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < s_.params.size(); ++i) {
      const std::string& name = s_.params[i].name;
      source.read_into(s_.params[i].tensor.detach(), name, state_kind::param, 0);
      source.read_into(state_[i].exp_avg, name, state_kind::exp_avg, 0);
      source.read_into(state_[i].exp_avg_sq, name, state_kind::exp_avg_sq, 0);
    }
  }

  int64_t param_bytes() const {
    int64_t n = 0;
    for (const auto& p : s_.params) n += static_cast<int64_t>(p.tensor.nbytes());
    return n;
  }
  int64_t state_bytes() const {
    int64_t n = 0;
    for (const auto& s : state_) n += static_cast<int64_t>(s.exp_avg.nbytes() + s.exp_avg_sq.nbytes());
    return n;
  }

 private:
  ReplicatedAdamWSetup s_;
  std::vector<AdamWState> state_;
};

}  // namespace plait
