// The single-process strategy: every parameter, gradient and optimizer state whole on
// this rank, no communication. It is the reference every other strategy is judged by,
// so it does exactly what the SDK's optimizer math says and nothing else.
#include <cmath>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class SingleProcess final : public plait::DataParallel {
 public:
  void setup(const plait::DataParallelSetup& setup) override {
    PLAIT_CHECK(setup.dp_group == nullptr || setup.dp_group->size() == 1,
                "the 'none' strategy runs on one data-parallel rank",
                "choose a data-parallel plugin such as ddp for dp > 1");
    optimizer_ = plait::WholeParamsAdamW(setup.model->parameters(), setup.adamw);
    tp_ = setup.tp_group;
    pp_ = setup.pp_group;
  }

  void after_backward(const plait::MicrobatchInfo& mb) override {
    if (mb.is_last()) {
      plait::sum_over_tp(plait::partial_grads(optimizer_.params(), "none"), tp_, optimizer_.params().front().tensor.device(),
                         "none");
    }
  }

  plait::StepResult step(const plait::StepArgs& args) override {
    const auto& first = optimizer_.params().front().tensor;
    const double norm = plait::global_grad_norm(optimizer_.squared_grad_norms<plait::SquaredNorms>(), nullptr, tp_, pp_,
                                                first.options(), "none");
    optimizer_.update(args.step, args.lr, plait::clip_coefficient(norm, args.grad_clip));
    return {norm};
  }

  plait::NamedTensors full_gradients() override { return optimizer_.named_grads(); }
  plait::NamedTensors full_parameters() override { return optimizer_.named_params(); }

  // What this rank holds at the peak of a step: every gradient is whole during backward.
  plait::StateBytes state_bytes() const override {
    plait::StateBytes bytes;
    bytes.params = bytes.grads = optimizer_.param_bytes();
    bytes.optimizer = optimizer_.state_bytes();
    return bytes;
  }

 private:
  plait::WholeParamsAdamW optimizer_;
  plait::Communicator* tp_ = nullptr;
  plait::Communicator* pp_ = nullptr;
};

}  // namespace

PLAIT_PLUGIN(SingleProcess, "none", "1.0.0", "grad_accum,bf16,float64,pipeline,tensor", plait_schema_toml,
             "single process: whole model, gradients and AdamW state on one rank (the reference)")
