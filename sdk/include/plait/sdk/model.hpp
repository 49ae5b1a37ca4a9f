#pragma once
// A model, as plugins see it: an ordered list of units (embedding, blocks, head), each
// a module from tensor to tensor. Strategies act on units: a pipeline keeps a slice of
// them, activation checkpointing and FSDP wrap them, data parallel reads their
// parameters. Parameter names are the reference model's own (nanoGPT, Hugging Face),
// built as the unit's prefix + the unit's local parameter name.
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "plait/sdk/version.hpp"

namespace plait {

// How the tensor-parallel axis splits a parameter: along `dim` into equal slices, one
// per tp rank; with `parts` > 1 the parameter is `parts` tensors stacked along `dim`
// (q|k|v) and each is sliced alike. dim -1: every tp rank holds it whole.
struct TensorSplit {
  int64_t dim = -1;
  int64_t parts = 1;
  // Held whole, but each tp rank's gradient is a partial sum: the parameter met only this
  // rank's part of the input (sequence parallel's norms and row biases). The data plugin
  // sums these gradients over tp once per step (partial_grads.hpp).
  bool partial_grad = false;
};

// A module with one tensor input and one tensor output.
class PLAIT_SDK_VISIBLE Layer : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  // The split of one of this layer's own parameters (by its local name, e.g. "weight").
  virtual TensorSplit split_of(const std::string& local_name) const { return {}; }
};

// A layer that runs another around something of its own (gathering its parameters,
// recomputing it). It registers the inner layer's children and parameters under their
// own names, so wrapping changes no parameter name and no tensor-parallel split. A frozen
// parameter stays frozen (torch's register_parameter would make it trainable again).
class PLAIT_SDK_VISIBLE WrappingLayer : public Layer {
 public:
  explicit WrappingLayer(std::shared_ptr<Layer> inner) : inner_(std::move(inner)) {
    for (const auto& child : inner_->named_children()) register_module(child.key(), child.value());
    for (const auto& p : inner_->named_parameters(/*recurse=*/false)) {
      register_parameter(p.key(), p.value(), p.value().requires_grad());
    }
  }
  TensorSplit split_of(const std::string& local_name) const override { return inner_->split_of(local_name); }

 protected:
  std::shared_ptr<Layer> inner_;
};

enum class UnitKind { embedding, block, head };

struct UnitSlot {
  std::string prefix;  // e.g. "transformer.h.3.", prepended to the unit's parameter names
  UnitKind kind = UnitKind::block;
  std::shared_ptr<Layer> unit;
  // Parameters of other units this unit's forward reads (a tied head reads the token
  // embedding), by full name. A strategy that frees a unit's parameters between uses
  // must keep the owner's gathered while this unit runs.
  std::vector<std::string> borrowed;
};

struct ParamRef {
  std::string name;  // full reference name, e.g. "transformer.h.0.attn.c_attn.weight"
  at::Tensor tensor;
  bool decay = false;  // AdamW weight decay applies (matrices and embeddings, not biases/norms)
  TensorSplit split;   // this rank's slice of the reference parameter, under tensor parallel
};

// The units one rank runs, in order.
struct StageModel {
  std::vector<UnitSlot> units;

  at::Tensor forward(const at::Tensor& input) const {
    at::Tensor h = input;
    for (const auto& slot : units) h = slot.unit->forward(h);
    return h;
  }

  // Every trainable parameter once, in unit order: the ones a data plugin reduces,
  // shards and steps. Decay is decided by shape here (2-D and up decays), so read this
  // before a strategy reshapes parameters. (API 12.6) Frozen parameters (requires_grad
  // false: [train] freeze) are left out; the core refuses to freeze any under a data
  // plugin without the capability `frozen`, so one built before 12.6 never meets them.
  std::vector<ParamRef> parameters() const {
    std::vector<ParamRef> out = all_parameters();
    std::erase_if(out, [](const ParamRef& p) { return !p.tensor.requires_grad(); });
    return out;
  }

  // (API 12.6) Every parameter once, frozen ones too, in unit order.
  std::vector<ParamRef> all_parameters() const {
    std::vector<ParamRef> out;
    for (const auto& slot : units) {
      // Module by module (the order of named_parameters), so each parameter's own layer
      // can say how tensor parallel splits it.
      for (const auto& module : slot.unit->named_modules("", /*include_self=*/true)) {
        const auto* layer = dynamic_cast<const Layer*>(module.value().get());
        const std::string path = module.key().empty() ? slot.prefix : slot.prefix + module.key() + ".";
        for (const auto& item : module.value()->named_parameters(/*recurse=*/false)) {
          out.push_back({path + item.key(), item.value(), item.value().dim() >= 2,
                         layer ? layer->split_of(item.key()) : TensorSplit{}});
        }
      }
    }
    return out;
  }
};

}  // namespace plait
