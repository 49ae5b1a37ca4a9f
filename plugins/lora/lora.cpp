// LoRA (Hu et al. 2021) as an adapter plugin. Beside each targeted linear W of the frozen
// model it adds y += (alpha / r) * dropout(x) A^T B^T, A [r, in] and B [out, r], named as
// Hugging Face PEFT names them (<linear>.lora_A.weight, <linear>.lora_B.weight) so that
// an export is a PEFT adapter as it stands. A starts as PEFT's (Kaiming-uniform with
// a = sqrt(5): uniform within 1 / sqrt(in)), drawn from the run's seed and its name like
// every plait parameter, and B at zero, so step 0 is the base model's.
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"

namespace {

using plait::concat;
using Weights = std::vector<std::pair<std::string, at::Tensor>>;

// PEFT's default target_modules per model type (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
std::vector<std::string> default_targets(const std::string& family) {
  if (family == "gpt2") return {"c_attn"};
  return {"q_proj", "v_proj"};
}

// PEFT's rule for a list of target_modules: the module's name, or its last components.
bool matches(const std::string& module, const std::string& target) {
  return module == target ||
         (module.size() > target.size() && module.ends_with(target) && module[module.size() - target.size() - 1] == '.');
}

at::Tensor seeded_uniform(at::IntArrayRef shape, double bound, uint64_t seed, const std::string& name,
                          const at::TensorOptions& options) {
  if (options.device().is_meta()) return at::empty(shape, options);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(plait::name_seed(seed, name));
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  t.uniform_(-bound, bound, gen);
  return t.to(options);
}

// One factor (A or B): a module holding "weight", so names come out as PEFT's, with its
// tensor-parallel split.
class Factor final : public plait::Layer {
 public:
  Factor(at::Tensor weight, plait::TensorSplit split) : split_(split) {
    weight_ = register_parameter("weight", std::move(weight));
  }
  at::Tensor forward(const at::Tensor& x) override { return at::linear(x, weight_); }
  plait::TensorSplit split_of(const std::string&) const override { return split_; }

 private:
  at::Tensor weight_;
  plait::TensorSplit split_;
};

// This rank's part of A [r, in] and B [out, r] beside a linear split over tensor-parallel
// ranks: beside a column split (outputs kept out / n) B keeps its rows alike (each fused
// part's) and A is whole with a partial gradient; beside a row split (inputs kept in / n)
// A keeps its columns and B is whole with a partial gradient. Whole beside no split.
struct Placement {
  plait::TensorSplit a, b;
  int64_t b_rows = 0;
};

Placement place(const plait::AdapterSite& site) {
  const bool split = site.shards > 1;
  if (site.split == plait::Split::column && split) {
    return {{-1, 1, true}, {0, site.spec.fused_parts}, site.spec.out_features / site.shards};
  }
  if (site.split == plait::Split::row && split) return {{1, 1}, {-1, 1, true}, site.spec.out_features};
  return {{}, {}, site.spec.out_features};
}

class LoraLayer final : public plait::Layer {
 public:
  LoraLayer(const plait::AdapterSite& site, int64_t rank, double alpha, double dropout)
      : scale_(alpha / static_cast<double>(rank)), dropout_p_(dropout), dropout_(site.dropout) {
    const plait::LinearSpec& s = site.spec;
    const Placement placed = place(site);
    // Drawn whole from its name, like every plait parameter, then this rank's columns.
    at::Tensor a = seeded_uniform({rank, s.in_features}, 1.0 / std::sqrt(static_cast<double>(s.in_features)),
                                  site.init.seed, s.name + ".lora_A.weight", site.init.options);
    if (placed.a.dim == 1) {
      const int64_t n = s.in_features / site.shards;
      a = a.narrow(1, site.shard * n, n).contiguous();
    }
    a_ = register_module("lora_A", std::make_shared<Factor>(a, placed.a));
    b_ = register_module("lora_B", std::make_shared<Factor>(plait::filled({placed.b_rows, rank}, 0.0, site.init.options), placed.b));
  }
  at::Tensor forward(const at::Tensor& x) override {
    return b_->forward(a_->forward(dropout_(x, dropout_p_))) * scale_;
  }

 private:
  double scale_, dropout_p_;
  std::function<at::Tensor(const at::Tensor&, double)> dropout_;
  std::shared_ptr<Factor> a_, b_;
};

class Lora final : public plait::Adapter, public plait::AdapterCostModel {
 public:
  void on_configure() override {
    const auto lora = plait_options::Options::from(options());  // [lora], typed from schema.toml
    rank_ = lora.rank;
    alpha_ = lora.alpha;
    dropout_ = lora.dropout;
    targets_ = lora.targets;
  }

  bool adapts(const plait::LinearSpec& spec) const override {
    for (const auto& target : targets_or_defaults()) {
      if (matches(spec.name, target)) return true;
    }
    return false;
  }

  void check_targets(const std::vector<plait::LinearSpec>& linears) const override {
    std::set<std::string> names;
    for (const auto& spec : linears) names.insert(spec.child_name());
    std::string listing;
    for (const auto& n : names) listing += (listing.empty() ? "" : ", ") + n;
    for (const auto& target : targets_) {
      bool found = false;
      for (const auto& spec : linears) found = found || matches(spec.name, target);
      PLAIT_CHECK(found, concat(options().where("targets"), ": [lora] target \"", target, "\" matches no linear of the model"),
                  concat("the model's linears: ", listing, " (a target matches a module name or its last components)"));
    }
  }

  std::shared_ptr<plait::Layer> make(const plait::AdapterSite& site) override {
    return std::make_shared<LoraLayer>(site, rank_, alpha_, dropout_);
  }

  // Per token: A keeps what it reads (x itself, or under dropout the dropped copy and the
  // bool mask masked_fill keeps), B keeps A's output; their products 2 r (in + out), with
  // this rank's part of in or out.
  plait::AdapterCost cost(const plait::AdapterSite& site, int64_t element_bytes) const override {
    const Placement placed = place(site);
    const int64_t in = placed.a.dim == 1 ? site.spec.in_features / site.shards : site.spec.in_features;
    plait::AdapterCost c;
    c.keeps_input = dropout_ == 0.0;
    c.kept_bytes = rank_ * element_bytes + (c.keeps_input ? 0 : in * (element_bytes + 1));
    c.flops = 2.0 * static_cast<double>(rank_) * static_cast<double>(in + placed.b_rows);
    return c;
  }

  void* find_extension(std::string_view id) override { return plait::offer<plait::AdapterCostModel>(this, id); }

  // W + (alpha / r) B A, computed in float64 and stored in W's dtype.
  void merge(Weights& weights) const override {
    std::map<std::string, at::Tensor*> by_name;
    for (auto& [name, t] : weights) by_name[name] = &t;
    const std::string suffix = ".lora_A.weight";
    for (const auto& [name, a] : by_name) {
      if (!name.ends_with(suffix)) continue;
      const std::string module = name.substr(0, name.size() - suffix.size());
      auto b = by_name.find(module + ".lora_B.weight"), w = by_name.find(module + ".weight");
      PLAIT_CHECK(b != by_name.end() && w != by_name.end(),
                  concat("lora: ", module, " has lora_A but not lora_B or its own weight"), "the checkpoint is damaged");
      at::Tensor& weight = *w->second;
      weight = (weight.to(at::kDouble) + b->second->to(at::kDouble).mm(a->to(at::kDouble)) * scale())
                   .to(weight.scalar_type());
    }
    std::erase_if(weights, [](const auto& named) { return named.first.find(".lora_") != std::string::npos; });
  }

  std::string peft_config(const std::string& family) const override {
    nlohmann::ordered_json config = {
        {"peft_type", "LORA"},
        {"task_type", "CAUSAL_LM"},
        {"base_model_name_or_path", nullptr},
        {"r", rank_},
        {"lora_alpha", alpha_},
        {"lora_dropout", dropout_},
        {"target_modules", targets_.empty() ? default_targets(family) : targets_},
        {"bias", "none"},
        // GPT-2's linears are transformers' Conv1D, weights stored [in, out].
        {"fan_in_fan_out", family == "gpt2"},
        {"init_lora_weights", true},
        {"use_rslora", false},
        {"use_dora", false},
        {"modules_to_save", nullptr},
        {"inference_mode", true},
    };
    return config.dump(2);
  }

 private:
  double scale() const { return alpha_ / static_cast<double>(rank_); }
  // Without targets, PEFT's defaults of every family: their module names do not meet.
  std::vector<std::string> targets_or_defaults() const {
    if (!targets_.empty()) return targets_;
    std::vector<std::string> all = default_targets("gpt2");
    for (const auto& t : default_targets("llama")) all.push_back(t);
    return all;
  }

  int64_t rank_ = 8;
  double alpha_ = 16.0, dropout_ = 0.0;
  std::vector<std::string> targets_;
};

}  // namespace

PLAIT_PLUGIN(Lora, "lora", "0.1.0", "tensor", plait_schema_toml,
             "LoRA adapters (Hu et al. 2021) beside the frozen model's linears, exported as Hugging Face PEFT adapters")
