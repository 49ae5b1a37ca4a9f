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
  // (API 12.8) This rank's part of the linear under tensor parallel (AdapterHost): part
  // `shard` of `shards` of a `split` (none, and 1 part, without tensor parallel). Beside a
  // column split the linear keeps out / shards of its outputs (each of spec.fused_parts
  // alike) and reads whole inputs; beside a row split it keeps in / shards of its inputs
  // and its output is a partial sum that the linear's reduction adds up. The adapter's
  // forward reads this rank's input of the product and returns its part of the product's
  // output (a partial sum beside a row split, added before the reduction), and its
  // parameters say their split (Layer::split_of): partial_grad for one held whole that
  // meets only this rank's part (LoRA's A beside a column split, its B beside a row split).
  // An adapter plugin places itself so when it claims the capability `tensor`.
  Split split = Split::none;
  int64_t shard = 0;
  int64_t shards = 1;
};

// (API 12.8) The adapter of part `part` of a group of linears, as this rank holds it
// (AdapterSite's split, shard, shards); null when that part is not adapted.
using AdapterMaker = std::function<std::shared_ptr<Layer>(std::size_t part, Split split, int64_t shard, int64_t shards)>;

// (API 12.8) An extension of a tensor plugin's layer factory (LayerFactory::find_extension,
// answered by plait::offer): linears with adapters placed inside its split products. A
// tensor plugin that offers it claims the capability `adapters`; the core refuses an
// adapter beside a tensor plugin without it.
class PLAIT_SDK_VISIBLE AdapterHost {
 public:
  static constexpr const char* kExtension = "plait.AdapterHost/1";
  virtual ~AdapterHost() = default;
  // `parts` as linear() (one part) or fused_linear() (several, read from one input) would
  // make them, with `adapter(i, ...)`'s layer beside part i: it reads the product's input
  // on this rank and its output is added to part i's before any reduction, so the adapter
  // adds no communication to the forward. Its parameters are registered on part i's
  // module, under their own names.
  virtual std::shared_ptr<Layer> adapted_linears(const std::vector<LinearSpec>& parts, const InitSpec& init,
                                                 const AdapterMaker& adapter) = 0;
};

// (API 12.9) What an adapter's layer beside one linear keeps for its backward and
// computes, per token of the linear's input, for `plait plan`: an extension of the adapter
// plugin (Plugin::find_extension, answered by plait::offer). Without it the planner counts
// the adapter's parameters (it builds them) and takes its activations and products as
// nothing.
struct AdapterCost {
  // Its backward keeps the linear's input tensor itself (LoRA's A reads x): kept once for
  // both. False when it keeps a tensor of its own instead (a dropped copy of x).
  bool keeps_input = true;
  int64_t kept_bytes = 0;  // per token, what else its forward keeps for its backward
  double flops = 0;        // per token, its forward's products (the backward's: twice)
};

class PLAIT_SDK_VISIBLE AdapterCostModel {
 public:
  static constexpr const char* kExtension = "plait.adapter_cost_model/1";
  virtual ~AdapterCostModel() = default;
  // For `site` as make() gets it (this rank's part of a split linear), activations of
  // `element_bytes` each.
  virtual AdapterCost cost(const AdapterSite& site, int64_t element_bytes) const = 0;
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
