#include "model/hf_config_check.hpp"

#include <cmath>
#include <fstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::json;

// One field of config.json: its value when the file leaves it out (transformers'
// default), the value this run's model needs, and the [model] key that sets it ("" when
// plait has no such setting).
struct Field {
  std::string key;
  Json default_value;
  Json ours;
  std::string model_key;
};

std::vector<Field> gpt2_fields(const ModelSpec& s) {
  return {{"n_layer", 12, s.n_layer, "n_layer"},
          {"n_embd", 768, s.n_embd, "n_embd"},
          {"n_head", 12, s.n_head, "n_head"},
          {"n_inner", nullptr, s.ffn_hidden == 4 * s.n_embd ? Json(nullptr) : Json(s.ffn_hidden), "ffn_hidden"},
          {"vocab_size", 50257, s.vocab_size, "vocab_size"},
          {"activation_function", "gelu_new", "gelu", ""},  // plait's GELU is the exact one
          {"layer_norm_epsilon", 1e-5, s.norm_eps, "norm_eps"},
          {"scale_attn_weights", true, true, ""},
          {"scale_attn_by_inverse_layer_idx", false, false, ""},
          {"tie_word_embeddings", true, true, ""}};
}

std::vector<Field> llama_fields(const ModelSpec& s) {
  return {{"num_hidden_layers", 32, s.n_layer, "n_layer"},
          {"hidden_size", 4096, s.n_embd, "n_embd"},
          {"num_attention_heads", 32, s.n_head, "n_head"},
          {"num_key_value_heads", nullptr, s.n_kv_head == s.n_head ? Json(nullptr) : Json(s.n_kv_head), "n_kv_head"},
          {"intermediate_size", 11008, s.ffn_hidden, "ffn_hidden"},
          {"vocab_size", 32000, s.vocab_size, "vocab_size"},
          {"head_dim", nullptr, nullptr, ""},
          {"hidden_act", "silu", "silu", ""},
          {"rms_norm_eps", 1e-6, s.norm_eps, "norm_eps"},
          {"rope_theta", 10000.0, s.rope_theta, "rope_theta"},
          {"rope_type", "default", "default", ""},
          {"attention_bias", false, false, ""},
          {"mlp_bias", false, false, ""},
          {"tie_word_embeddings", false, false, ""}};
}

// transformers 5 keeps rope theta and type in rope_parameters; earlier ones at the top
// level and in rope_scaling.
Json theirs_of(const Json& config, const Field& f, const ModelSpec& spec) {
  Json v = config.contains(f.key) ? config.at(f.key) : f.default_value;
  if (f.key == "rope_theta" || f.key == "rope_type") {
    for (const char* nested : {"rope_parameters", "rope_scaling"}) {
      if (config.contains(nested) && config.at(nested).is_object() && config.at(nested).contains(f.key)) {
        v = config.at(nested).at(f.key);
      }
    }
    if (f.key == "rope_type" && v.is_null()) v = "default";
  }
  // A null that stands for a value derived from others: say it as that value.
  if (v.is_null() && f.key == "n_inner") v = 4 * spec.n_embd;
  if (v.is_null() && f.key == "num_key_value_heads") v = config.value("num_attention_heads", Json(32));
  if (v.is_null() && f.key == "head_dim") v = spec.head_dim();
  return v;
}

Json ours_of(const Field& f, const ModelSpec& spec) {
  if (!f.ours.is_null()) return f.ours;
  if (f.key == "n_inner") return 4 * spec.n_embd;
  if (f.key == "num_key_value_heads") return spec.n_head;
  if (f.key == "head_dim") return spec.head_dim();
  return f.ours;
}

bool same(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
  }
  return a == b;
}

Json read_config(const fs::path& path) {
  std::ifstream in(path);
  PLAIT_CHECK(in.good(), concat(path.string(), " cannot be read"), "a Hugging Face model folder holds its config.json");
  try {
    Json j = Json::parse(in);
    PLAIT_CHECK(j.is_object(), concat(path.string(), " is not a JSON object"), "it is damaged: take it again from its source");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat(path.string(), " is not valid JSON: ", json_problem(e)), "it is damaged: take it again from its source");
  }
}

}  // namespace

void check_hf_config(const fs::path& folder, const ModelSpec& spec) {
  const fs::path path = folder / "config.json";
  const Json config = read_config(path);
  const std::string type = config.value("model_type", std::string());
  PLAIT_CHECK(type == spec.family, concat(path.string(), ": model_type is '", type, "', and this run's model is ", spec.family),
              concat("set [model] family = \"", type, "\" with its dimensions, or init_from a ", spec.family, " model"));
  for (const Field& f : spec.family == "gpt2" ? gpt2_fields(spec) : llama_fields(spec)) {
    const Json theirs = theirs_of(config, f, spec), ours = ours_of(f, spec);
    if (same(theirs, ours)) continue;
    throw Error(concat(path.string(), ": ", f.key, " is ", theirs.dump(), ", and this run's model has ", ours.dump()),
                f.model_key.empty()
                    ? concat("plait's ", spec.family, " has ", f.key, " = ", ours.dump(), " only: a model built otherwise "
                             "would compute another function with these weights")
                    : concat("set [model] ", f.model_key, " = ", theirs.dump(), " to fine-tune the model that was saved"));
  }
}

}  // namespace plait
