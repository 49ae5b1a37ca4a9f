#include "train/activation_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward without keeping the unit's intermediate tensors; backward recomputes them.
struct Recompute : public torch::autograd::Function<Recompute> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Layer* unit) {
    const c10::DeviceType device = x.device().type();
    ctx->saved_data["unit"] = reinterpret_cast<int64_t>(unit);
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(device);
    ctx->saved_data["autocast_dtype"] = at::autocast::get_autocast_dtype(device);
    ctx->save_for_backward({x});
    return unit->forward(x);  // a custom function's forward runs without grad
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* unit = reinterpret_cast<Layer*>(ctx->saved_data["unit"].toInt());
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    const c10::DeviceType device = x.device().type();
    // The forward ran under the caller's autocast; the recomputation must too.
    const bool autocast = ctx->saved_data["autocast"].toBool();
    const bool was_enabled = at::autocast::is_autocast_enabled(device);
    const at::ScalarType was_dtype = at::autocast::get_autocast_dtype(device);
    at::Tensor y;
    {
      at::AutoGradMode grad_on(true);
      at::autocast::set_autocast_dtype(device, ctx->saved_data["autocast_dtype"].toScalarType());
      at::autocast::set_autocast_enabled(device, autocast);
      y = unit->forward(x);
      at::autocast::set_autocast_enabled(device, was_enabled);
      at::autocast::set_autocast_dtype(device, was_dtype);
      if (autocast) at::autocast::clear_cache();
    }
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
  PLAIT_CHECK(mode == "full", concat("unknown activation checkpointing mode '", mode, "'"),
              "train.activation_checkpointing is \"none\" or \"full\"");
  for (auto& slot : model.units) {
    if (slot.kind == UnitKind::block) slot.unit = std::make_shared<CheckpointedUnit>(slot.unit);
  }
}

}  // namespace plait
