// A data plugin as an in-house team would have written it against plugin API 12.0, built
// against the frozen 12.0 headers (../12.0/include) and never rebuilt: replicated data
// parallel that sums every gradient over the data-parallel group after the step's last
// backward (one flat all-reduce), then the SDK's AdamW. The suite checks that plaits of
// later minor versions still load it and that it trains the single process's model.
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class FrozenReplicated final : public plait::DataParallel {
 public:
  void setup(const plait::DataParallelSetup& setup) override {
    dp_ = setup.dp_group;
    optimizer_ = plait::ReplicatedAdamW({.params = setup.model->parameters(),
                                         .adamw = setup.adamw,
                                         .tp_group = setup.tp_group,
                                         .pp_group = setup.pp_group,
                                         .plugin = "frozen-replicated"});
    log().info("frozen-replicated (API ", PLAIT_API_VERSION_STRING, "): ", optimizer_.params().size(), " parameters");
  }

  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (!mb.is_last()) return;
    optimizer_.sum_partial_grads();
    if (dp_ == nullptr || dp_->size() == 1) return;
    std::vector<at::Tensor> grads;
    for (const auto& p : optimizer_.params()) {
      if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
    }
    if (grads.empty()) return;
    std::vector<at::Tensor> flat;
    for (const auto& g : grads) flat.push_back(g.reshape({-1}));
    at::Tensor bucket = at::cat(flat);
    plait::AllReduceOptions o;
    o.tag = {"frozen-replicated", "grad-sync", "all", mb.index};
    dp_->all_reduce(bucket, o)->wait();
    at::NoGradGuard no_grad;
    int64_t offset = 0;
    for (auto& g : grads) {
      g.copy_(bucket.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }
  plait::StateBytes state_bytes() const override {
    plait::StateBytes bytes;
    bytes.params = bytes.grads = optimizer_.param_bytes();
    bytes.optimizer = optimizer_.state_bytes();
    return bytes;
  }

 protected:
  plait::GradNorm grad_norm() override { return optimizer_.grad_norm(); }
  void update(const plait::UpdateArgs& args) override { optimizer_.update(args); }
  void discard_gradients() override { optimizer_.discard(); }

 private:
  plait::Communicator* dp_ = nullptr;
  plait::ReplicatedAdamW optimizer_;
};

}  // namespace

PLAIT_PLUGIN(FrozenReplicated, "frozen-replicated", "12.0.0", "grad_accum,float64,multi_rank,pipeline,tensor",
             plait_schema_toml, "replicated data parallel built against the frozen plugin API 12.0 headers")
