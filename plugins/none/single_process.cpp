// The single-process strategy: every parameter, gradient and optimizer state whole on
// this rank, no communication. It is the reference every other strategy is judged by,
// so it does exactly what the SDK's optimizer math says and nothing else.
#include <cmath>
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class SingleProcess final : public plait::DataParallel {
 public:
  void setup(const plait::DataParallelSetup& setup) override {
    PLAIT_CHECK(setup.dp_group == nullptr || setup.dp_group->size() == 1,
                "the 'none' strategy runs on one data-parallel rank",
                "choose a data-parallel plugin such as ddp for dp > 1");
    adamw_ = setup.adamw;
    params_ = setup.model->parameters();
    for (const auto& p : params_) state_.push_back(plait::adamw_state_like(p.tensor));
  }

  plait::StepResult step(const plait::StepArgs& args) override {
    at::NoGradGuard no_grad;
    double sum_sq = 0.0;
    for (const auto& p : params_) {
      if (p.tensor.grad().defined()) sum_sq += plait::squared_norm(p.tensor.grad());
    }
    const double norm = std::sqrt(sum_sq);
    const double coef = plait::clip_coefficient(norm, args.grad_clip);
    for (std::size_t i = 0; i < params_.size(); ++i) {
      at::Tensor& param = params_[i].tensor;
      if (!param.grad().defined()) continue;
      at::Tensor grad = param.grad();
      if (coef < 1.0) grad.mul_(coef);
      plait::adamw_update(param, grad, state_[i], args.step, args.lr, adamw_, params_[i].decay);
      param.mutable_grad() = at::Tensor();  // as zero_grad(set_to_none=True)
    }
    return {norm};
  }

  plait::NamedTensors full_gradients() override {
    plait::NamedTensors out;
    for (const auto& p : params_) {
      out.emplace_back(p.name, p.tensor.grad().defined() ? p.tensor.grad().detach().clone() : at::zeros_like(p.tensor));
    }
    return out;
  }

  plait::NamedTensors full_parameters() override {
    plait::NamedTensors out;
    for (const auto& p : params_) out.emplace_back(p.name, p.tensor.detach());
    return out;
  }

  plait::StateBytes state_bytes() const override {
    // What this rank holds at the peak of a step: every gradient is whole during backward.
    plait::StateBytes bytes;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const int64_t n = static_cast<int64_t>(params_[i].tensor.nbytes());
      bytes.params += n;
      bytes.grads += n;
      bytes.optimizer += static_cast<int64_t>(state_[i].exp_avg.nbytes() + state_[i].exp_avg_sq.nbytes());
    }
    return bytes;
  }

 private:
  plait::AdamWConfig adamw_;
  std::vector<plait::ParamRef> params_;
  std::vector<plait::AdamWState> state_;
};

}  // namespace

PLAIT_PLUGIN(SingleProcess, "none", "1.0.0", "grad_accum,bf16,float64", plait_schema_toml,
             "single process: whole model, gradients and AdamW state on one rank (the reference)")
