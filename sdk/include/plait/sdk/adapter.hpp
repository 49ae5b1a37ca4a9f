#pragma once
// (API 12.7) Adapters: small trainable layers beside the linears of a frozen model (LoRA,
// Hu et al. 2021; DoRA and the like as plugins of this kind). The core builds every
// linear through the layer factory; for each linear an adapter adapts, it adds the
// adapter's layer beside it, its output added to the linear's, and freezes every
// parameter of the model that no adapter made (train.freeze's mechanism, so every data
// plugin claiming `frozen` trains the adapters alone).
//
//   [parallel]
//   adapter = "lora"
//   [lora]
//   rank = 8
//   targets = ["q_proj", "v_proj"]
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plait/sdk/layers.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

// One linear an adapter changes.
struct PLAIT_ABI_GROWS AdapterSite {
  LinearSpec spec;  // the reference linear: whole widths and its full name
  InitSpec init;    // draw parameters from init.seed and their full names (init.hpp) to match every strategy
  // x with elements dropped with probability p (the rest scaled by 1 / (1 - p)), for the
  // adapter's input: whether an element is dropped is a hash of the run's seed, this
  // site, the global sample, position and feature ([model] dropout's masks), so every
  // strategy drops what the single process drops. x itself when p = 0.
  std::function<at::Tensor(const at::Tensor& x, double p)> dropout;
};

class PLAIT_SDK_VISIBLE Adapter : public Plugin {
 public:
  using Interface = Adapter;
  static constexpr const char* kKind = "adapter";

  // Whether this adapter changes the linear `spec` (its options name the targets).
  virtual bool adapts(const LinearSpec& spec) const = 0;
  // Before launch, with every linear of the model: refuse targets that match none,
  // naming the option's place (Options::where).
  virtual void check_targets(const std::vector<LinearSpec>& linears) const {}
  // The adapter of one linear. Its forward reads the linear's input and returns what is
  // added to the linear's output. Its parameters, registered on it or on its children
  // ("lora_A" holding "weight"), appear under the linear's name
  // ("...q_proj.lora_A.weight"): checkpoints and exports use those names.
  virtual std::shared_ptr<Layer> make(const AdapterSite& site) = 0;
  // For `plait export --hf --merge`: `weights` holds the model's whole tensors by
  // reference name, the adapters' among them; fold each adapter into its linear's weight
  // and remove the adapter's tensors, leaving the reference model's. Throws plait::Error
  // when this adapter has no merged form.
  virtual void merge(std::vector<std::pair<std::string, at::Tensor>>& weights) const = 0;
  // For `plait export --peft`: the adapter_config.json that Hugging Face PEFT loads these
  // adapters with, on a model of `family` ("gpt2", "llama"); empty when PEFT has no form
  // for this adapter. The tensors go out as "base_model.model." + their reference names.
  virtual std::string peft_config(const std::string& family) const {
    return {};
  }
};

}  // namespace plait
