#include "train/activation_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "model/attention_core.hpp"
#include "model/document_layout.hpp"
#include "model/dropout.hpp"
#include "plait/sdk/error.hpp"
#include "model/precision.hpp"

namespace plait {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward without keeping the unit's intermediate tensors; backward recomputes them.
struct Recompute : public torch::autograd::Function<Recompute> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Layer* unit) {
    const AutocastState autocast = AutocastState::of(x.device().type());
    ctx->saved_data["unit"] = reinterpret_cast<int64_t>(unit);
    ctx->saved_data["autocast"] = autocast.enabled;
    ctx->saved_data["autocast_dtype"] = autocast.dtype;
    if (const auto stream = current_dropout_stream()) {
      ctx->saved_data["dropout_seed"] = static_cast<int64_t>(stream->seed);
      ctx->saved_data["dropout_first_sample"] = stream->first_sample;
    }
    save_layout(ctx->saved_data, current_document_layout());
    ctx->save_for_backward({x});
    return unit->forward(x);  // a custom function's forward runs without grad
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* unit = reinterpret_cast<Layer*>(ctx->saved_data["unit"].toInt());
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    // The forward ran under the caller's autocast; the recomputation must too.
    const AutocastState autocast{ctx->saved_data["autocast"].toBool(), ctx->saved_data["autocast_dtype"].toScalarType()};
    // The same samples as the forward, so dropout drops the same elements again.
    std::optional<DropoutStream> stream;
    if (ctx->saved_data.count("dropout_seed") != 0) {
      stream = DropoutStream{static_cast<uint64_t>(ctx->saved_data["dropout_seed"].toInt()),
                             ctx->saved_data["dropout_first_sample"].toInt()};
    }
    DropoutScope samples(stream);
    // The same documents as the forward: packed rows attend and place positions alike.
    DocumentScope documents(saved_layout(ctx->saved_data));
    at::Tensor y = under_autocast(autocast, x.device().type(), [&] {
      at::AutoGradMode grad_on(true);
      return unit->forward(x);
    });
    torch::autograd::backward({y}, {grads[0]});
    return {x.grad(), at::Tensor()};
  }
};

// A block that checkpoints its inner block.
class CheckpointedUnit final : public WrappingLayer {
 public:
  using WrappingLayer::WrappingLayer;
  at::Tensor forward(const at::Tensor& x) override {
    if (!at::GradMode::is_enabled() || !x.requires_grad()) return inner_->forward(x);
    return Recompute::apply(x, inner_.get());
  }
};

}  // namespace

void apply_activation_checkpointing(StageModel& model, const std::string& mode) {
  if (mode == "none") return;
  PLAIT_CHECK(mode == "full" || mode == "selective", concat("unknown activation checkpointing mode '", mode, "'"),
              "train.activation_checkpointing is \"none\", \"selective\" or \"full\"");
  if (mode == "selective") {
    for (auto& slot : model.units) {
      for (const auto& module : slot.unit->modules()) {
        if (auto* core = dynamic_cast<AttentionCore*>(module.get())) core->recompute_in_backward(true);
      }
    }
    return;
  }
  for (auto& slot : model.units) {
    if (slot.kind == UnitKind::block) slot.unit = std::make_shared<CheckpointedUnit>(slot.unit);
  }
}

}  // namespace plait
