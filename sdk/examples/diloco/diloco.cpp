// DiLoCo (Douillard et al., 2023): each data-parallel replica takes `sync_every` AdamW
// steps on its own batches, sending nothing but the step's norm; then an outer step
// averages the replicas' parameter change since the last one and applies it to the
// shared weights with Nesterov momentum. It sends the model once per outer step instead
// of the gradients every step, and does not train like the single process by design:
// it claims `approximate`, so `plait verify` measures its loss gap and traffic against
// ddp instead of demanding equality.
#include <string>
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class DiLoCo final : public plait::DataParallel {
 public:
  void setup(const plait::DataParallelSetup& setup) override {
    dp_ = setup.dp_group, tp_ = setup.tp_group, pp_ = setup.pp_group;
    optimizer_ = plait::ReplicatedAdamW({.params = setup.model->parameters(), .adamw = setup.adamw, .tp_group = tp_,
                                         .pp_group = pp_, .plugin = "diloco"});
    at::NoGradGuard no_grad;
    for (const auto& p : optimizer_.params()) {
      shared_.push_back(p.tensor.detach().clone());
      momentum_.push_back(at::zeros_like(p.tensor));
    }
  }

  // The loss is normalised by every replica's tokens; a replica steps on its own mean.
  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (!mb.is_last()) return;
    optimizer_.sum_partial_grads();
    if (dp_ == nullptr) return;
    at::NoGradGuard no_grad;
    for (const auto& p : optimizer_.params()) {
      if (p.tensor.grad().defined()) p.tensor.mutable_grad().mul_(dp_->size());
    }
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  // The weights this replica trains with (the core mirrors them to tied copies); right
  // after an outer step, the shared weights.
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }

  // Shared weights and momentum, written once by all replicas (as `param`, so another
  // plugin resumes from them); each replica's own weights and moments under its own
  // kinds; replica 0's moments also as AdamW's, for a plugin that knows no replicas.
  std::vector<plait::StatePart> state_parts() override {
    std::vector<plait::StatePart> out;
    for (std::size_t i = 0; i < shared_.size(); ++i) {
      const std::string& name = optimizer_.params()[i].name;
      out.push_back({name, plait::state_kind::param, 0, shared_[i], replicas(), replica()});
      out.push_back({name, "diloco.momentum", 0, momentum_[i], replicas(), replica()});
    }
    for (const plait::StatePart& own : optimizer_.state_parts()) {
      out.push_back({own.param, local_kind(own.kind), 0, own.values});
      if (replica() == 0 && own.kind != plait::state_kind::param) out.push_back(own);
    }
    return out;
  }
  // From another plugin's checkpoint, or another dp size's: every replica starts from
  // the shared weights, with AdamW's moments and no momentum.
  void load_state(plait::StateSource& source) override {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < shared_.size(); ++i) {
      const std::string& name = optimizer_.params()[i].name;
      source.read_into(shared_[i], name, plait::state_kind::param, 0);
      if (source.has(name, "diloco.momentum")) source.read_into(momentum_[i], name, "diloco.momentum", 0);
    }
    const std::vector<plait::StatePart> own = optimizer_.state_parts();  // param, exp_avg, exp_avg_sq of each
    for (std::size_t k = 0; k < own.size(); ++k) {
      const bool mine = source.has(own[k].param, local_kind(own[k].kind));
      if (!mine && own[k].kind == plait::state_kind::param) {
        own[k].values.copy_(shared_[k / 3]);
      } else {
        source.read_into(own[k].values, own[k].param, mine ? local_kind(own[k].kind) : own[k].kind, 0);
      }
    }
  }

  // The replica's weights and moments, the shared weights and the momentum.
  plait::StateBytes state_bytes() const override {
    const int64_t params = optimizer_.param_bytes();
    return {.params = params, .grads = params, .optimizer = optimizer_.state_bytes() + 2 * params};
  }

 protected:
  // The root mean square of the replicas' norms: one clip for all, and a step no
  // replica can skip alone (a non-finite norm anywhere skips it everywhere).
  plait::GradNorm grad_norm() override {
    plait::SquaredNorms sums;
    for (const auto& p : optimizer_.params()) {
      if (p.tensor.grad().defined()) sums.add(p.split, p.tensor.grad());
    }
    const at::TensorOptions on = optimizer_.params().front().tensor.options();
    plait::GradNorm norm = plait::global_grad_norm(sums, dp_, tp_, pp_, on, "diloco");
    norm.squared = norm.squared / replicas();
    return norm;
  }

  void update(const plait::UpdateArgs& args) override {
    optimizer_.update(args);
    if (args.step % sync_every_ == 0) outer_step();
  }
  void discard_gradients() override { optimizer_.discard(); }

  void on_configure() override {
    sync_every_ = options().get<int64_t>("sync_every");
    outer_lr_ = options().get<double>("outer_lr");
    outer_momentum_ = options().get<double>("outer_momentum");
  }

 private:
  // The replicas' mean change since the last outer step, in one all-reduce, taken as
  // the outer gradient of a Nesterov step; every replica then restarts from the result.
  void outer_step() {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> changes;
    for (std::size_t i = 0; i < shared_.size(); ++i) changes.push_back((shared_[i] - optimizer_.params()[i].tensor).reshape({-1}));
    at::Tensor flat = at::cat(changes);
    if (dp_ != nullptr) {
      plait::AllReduceOptions o;
      o.tag = {"diloco", "outer-step", "", -1};
      dp_->all_reduce(flat, o)->wait();
      flat.div_(replicas());
    }
    int64_t offset = 0;
    for (std::size_t i = 0; i < shared_.size(); ++i) {
      const at::Tensor change = flat.narrow(0, offset, shared_[i].numel()).view(shared_[i].sizes());
      offset += shared_[i].numel();
      momentum_[i].mul_(outer_momentum_).add_(change);
      shared_[i].sub_(change + outer_momentum_ * momentum_[i], outer_lr_);
      optimizer_.params()[i].tensor.detach().copy_(shared_[i]);
    }
  }

  int replicas() const { return dp_ != nullptr ? dp_->size() : 1; }
  int replica() const { return dp_ != nullptr ? dp_->rank() : 0; }
  std::string local_kind(const std::string& kind) const {
    return plait::concat("diloco.replica", replica(), "of", replicas(), ".", kind);
  }
  plait::Communicator *dp_ = nullptr, *tp_ = nullptr, *pp_ = nullptr;
  int64_t sync_every_ = 8;
  double outer_lr_ = 0.7, outer_momentum_ = 0.9;
  plait::ReplicatedAdamW optimizer_;
  std::vector<at::Tensor> shared_, momentum_;
};

}  // namespace

PLAIT_PLUGIN(DiLoCo, "diloco", "0.1.0", "grad_accum,float64,multi_rank,pipeline,tensor,checkpoint,approximate",
             plait_schema_toml, "DiLoCo: sync_every local AdamW steps per replica, then a Nesterov step on their mean change")
