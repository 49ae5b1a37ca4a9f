// The single-process strategy: every parameter, gradient and optimizer state whole on
// this rank, no communication. It is the reference every other strategy is judged by,
// so it does exactly what the SDK's optimizer math says and nothing else.
#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class SingleProcess final : public plait::DataParallel, public plait::DataCostModel {
 public:
  // Everything whole in the parameters' dtype: parameters, gradients, two AdamW moments.
  plait::DataCost cost(const plait::CostQuery& q) const override { return {.state = plait::replicated_state(q)}; }
  void* find_extension(std::string_view id) override { return plait::offer<plait::DataCostModel>(this, id); }

  void setup(const plait::DataParallelSetup& setup) override {
    PLAIT_CHECK(setup.dp_group == nullptr || setup.dp_group->size() == 1,
                "the 'single' strategy runs on one data-parallel rank",
                "choose a data-parallel plugin such as ddp for dp > 1");
    optimizer_ = plait::ReplicatedAdamW({.params = setup.model->parameters(),
                                         .adamw = setup.adamw,
                                         .tp_group = setup.tp_group,
                                         .pp_group = setup.pp_group,
                                         .plugin = "single"});
  }

  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (mb.is_last()) optimizer_.sum_partial_grads();
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }
  std::vector<plait::StatePart> state_parts() override { return optimizer_.state_parts(); }
  void load_state(plait::StateSource& source) override { optimizer_.load_state(source); }

  // What this rank holds at the peak of a step: every gradient is whole during backward.
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
  plait::ReplicatedAdamW optimizer_;
};

}  // namespace

PLAIT_PLUGIN(SingleProcess, "single", "1.0.0", "grad_accum,bf16,float64,pipeline,tensor,checkpoint,frozen", plait_schema_toml,
             "single process: whole model, gradients and AdamW state on one rank (the reference)")
