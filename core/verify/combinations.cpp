#include "verify/combinations.hpp"

#include "config/schema.hpp"
#include "plait/sdk/error.hpp"

namespace plait::verify {

CombinationSampler::CombinationSampler(const PluginRecord& plugin, uint64_t seed) : plugin_(plugin), rng_(seed) {}

template <class T>
const T& CombinationSampler::pick(const std::vector<T>& choices) {
  return choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(rng_)];
}

// dp x pp x tp within 8 ranks, and the other kinds' plugins in the roles the mesh opens.
void CombinationSampler::mesh(Overrides& out) {
  const std::string& kind = plugin_.kind;
  // A comm plugin is used only when there is more than one process; a data plugin that
  // does not claim multi_rank has one replica (any other dp is refused and drawn again).
  const bool one_replica = kind == "data" && !plugin_.has_capability("multi_rank");
  const int dp = kind == "comm" ? pick<int>({2, 4}) : one_replica ? 1 : pick<int>({1, 2, 2, 4});
  const int pp = pick<int>({1, 1, 2}), tp = dp * pp <= 4 ? pick<int>({1, 1, 2}) : 1;
  out.push_back(concat("parallel.dp=", dp));
  if (pp > 1 || kind == "pipeline") out.push_back(concat("parallel.pp=", kind == "pipeline" ? std::max(pp, 2) : pp));
  if (tp > 1 || kind == "tensor") out.push_back(concat("parallel.tp=", kind == "tensor" ? std::max(tp, 2) : tp));
  if (kind != "data") {
    const std::string data = kind == "offload" ? pick<std::string>({"zero", "fsdp"})
                             : dp == 1        ? pick<std::string>({"single", "ddp", "zero"})
                                              : pick<std::string>({"ddp", "zero", "fsdp"});
    out.push_back("parallel.data=" + data);
    if (data == "zero") out.push_back(concat("zero.stage=", pick<int>({1, 2, 3})));
  }
  if (kind != "pipeline" && pp > 1) out.push_back("parallel.pipeline=" + pick<std::string>({"gpipe", "1f1b", "interleaved-1f1b"}));
  if (kind != "tensor" && tp > 1) {
    out.push_back("parallel.tensor=megatron");
    out.push_back(concat("megatron.sequence_parallel=", pick<std::string>({"true", "false"})));
  }
  if (kind == "data" && plugin_.has_capability("offload") && pick<int>({0, 0, 1})) out.push_back("parallel.offload=cpu");
}

void CombinationSampler::training(Overrides& out) {
  out.push_back("model.family=" + pick<std::string>({"gpt2", "llama"}));
  out.push_back("train.dtype=" + pick<std::string>({"float64", "float32"}));
  out.push_back(concat("train.grad_accum=", pick<int>({1, 2, 4})));
  out.push_back("train.grad_clip=" + pick<std::string>({"0.0", "0.5"}));
  out.push_back("model.dropout=" + pick<std::string>({"0.0", "0.1"}));
  out.push_back("train.activation_checkpointing=" + pick<std::string>({"none", "selective", "full"}));
}

// The plugin's own options: a choice, a bool, or an int within small bounds.
void CombinationSampler::own_options(Overrides& out) {
  const TableSchema schema = parse_schema(plugin_.schema_toml, plugin_.name, concat("plugin '", plugin_.name, "'"));
  for (const auto& o : schema.options) {
    const std::string key = concat(plugin_.name, ".", o.key);
    if (o.type == "bool") {
      out.push_back(key + "=" + pick<std::string>({"true", "false"}));
    } else if (o.type == "string" && !o.choices.empty()) {
      out.push_back(key + "=" + pick(o.choices).to_toml());
    } else if (o.type == "int" && o.min && o.max && *o.max - *o.min <= 8) {
      out.push_back(concat(key, "=", std::uniform_int_distribution<int64_t>(static_cast<int64_t>(*o.min), static_cast<int64_t>(*o.max))(rng_)));
    }
  }
}

Overrides CombinationSampler::next() {
  Overrides out = {concat("parallel.", plugin_.kind, "=", plugin_.name)};
  mesh(out);
  training(out);
  own_options(out);
  return out;
}

Overrides shrink(const Overrides& failing, const std::function<bool(const Overrides&)>& still_fails) {
  Overrides current = failing;
  for (std::size_t i = current.size(); i-- > 1;) {
    Overrides without = current;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    if (still_fails(without)) current = std::move(without);
  }
  return current;
}

}  // namespace plait::verify
