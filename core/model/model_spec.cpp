#include "model/model_spec.hpp"

#include <map>

#include "plait/sdk/error.hpp"

namespace plait {

const std::vector<NamedSize>& named_sizes() {
  //                 family   size   L   H  KV     C      F      V      T  theta
  auto gpt2 = [](const char* size, int64_t L, int64_t H, int64_t C, int64_t V, int64_t T) {
    return ModelSpec{"gpt2", size, L, H, H, C, 4 * C, V, T, 10000.0, 1e-5};
  };
  auto llama = [](const char* size, int64_t L, int64_t H, int64_t KV, int64_t C, int64_t F, int64_t V, int64_t T) {
    return ModelSpec{"llama", size, L, H, KV, C, F, V, T, 10000.0, 1e-5};
  };
  ModelSpec llama3_8b = llama("8b", 32, 32, 8, 4096, 14336, 128256, 8192);
  llama3_8b.rope_theta = 500000.0;
  static const std::vector<NamedSize> sizes = {
      {gpt2("tiny", 2, 4, 64, 256, 64), "test size, byte vocabulary", std::nullopt},
      {gpt2("124m", 12, 12, 768, 50304, 1024), "GPT-2 small, nanoGPT's padded vocabulary", 124475904},
      {gpt2("350m", 24, 16, 1024, 50304, 1024), "GPT-2 medium", std::nullopt},
      {gpt2("1b", 24, 16, 2048, 50304, 2048), "GPT-3 XL (1.3B) dimensions", std::nullopt},
      {gpt2("7b", 32, 32, 4096, 50304, 2048), "GPT-3 6.7B dimensions", std::nullopt},
      {gpt2("13b", 40, 40, 5120, 50304, 2048), "GPT-3 13B dimensions", std::nullopt},
      {gpt2("70b", 80, 64, 8192, 50304, 2048), "Llama-2-70B width and depth, GPT-2 blocks", std::nullopt},
      {llama("tiny", 2, 4, 2, 64, 176, 256, 64), "test size, byte vocabulary", std::nullopt},
      {llama("124m", 12, 12, 4, 768, 2048, 32000, 2048), "GPT-2-small width, Llama blocks", std::nullopt},
      {llama("350m", 24, 16, 4, 1024, 2816, 32000, 2048), "GPT-2-medium width, Llama blocks", std::nullopt},
      {llama("1b", 22, 32, 4, 2048, 5632, 32000, 2048), "TinyLlama-1.1B", 1100048384},
      {llama("7b", 32, 32, 32, 4096, 11008, 32000, 4096), "Llama-2-7B", 6738415616},
      {llama3_8b, "Llama-3-8B (rope theta 500000)", 8030261248},
      {llama("13b", 40, 40, 40, 5120, 13824, 32000, 4096), "Llama-2-13B", 13015864320},
      {llama("70b", 80, 64, 8, 8192, 28672, 32000, 4096), "Llama-2-70B", 68976648192},
  };
  return sizes;
}

std::string model_place(const Options& model, const std::string& key) {
  if (key == "family" || !model.has("size")) return model.where(key);
  const bool gpt2 = model.has("family") && model.get<std::string>("family") == "gpt2";
  if (gpt2 && key == "ffn_hidden") return model_place(model, "n_embd");  // 4 * n_embd
  if (gpt2 && key == "n_kv_head") return model_place(model, "n_head");
  if (!model.has(key) || (model.is_default(key) && !model.is_default("size"))) {
    return concat(model.where("size"), " (size = \"", model.get<std::string>("size"), "\")");
  }
  return model.where(key);
}

Options model_dimensions(const ModelSpec& spec, const Options& model) {
  const std::map<std::string, OptionValue> values = {
      {"family", spec.family},         {"n_layer", spec.n_layer},       {"n_head", spec.n_head},
      {"n_kv_head", spec.n_kv_head},   {"n_embd", spec.n_embd},         {"ffn_hidden", spec.ffn_hidden},
      {"vocab_size", spec.vocab_size}, {"block_size", spec.block_size},
  };
  std::map<std::string, std::string> places;
  std::map<std::string, bool> defaults;
  for (const auto& [key, value] : values) {
    places[key] = model_place(model, key);
    defaults[key] = (!model.has(key) || model.is_default(key)) && model.is_default("size");
  }
  return Options("model", values, std::move(places), std::move(defaults));
}

namespace {

// The place of whichever of two dimensions the config sets (a message about both starts there).
std::string either_place(const Options& model, const std::string& a, const std::string& b) {
  return model.has(a) && !model.is_default(a) ? model_place(model, a) : model_place(model, b);
}

void check_dimensions(const ModelSpec& spec, const Options& model) {
  PLAIT_CHECK(spec.dropout < 1.0,
              concat(model.where("dropout"), ": [model] dropout is ", spec.dropout, ": every element would be dropped"),
              "choose a probability below 1 (0 turns dropout off)");
  PLAIT_CHECK(spec.n_embd % spec.n_head == 0,
              concat(either_place(model, "n_embd", "n_head"), ": [model] n_embd ", spec.n_embd,
                     " is not a multiple of n_head ", spec.n_head),
              "choose n_embd = n_head * head size");
  PLAIT_CHECK(spec.n_head % spec.n_kv_head == 0,
              concat(either_place(model, "n_kv_head", "n_head"), ": [model] n_kv_head ", spec.n_kv_head,
                     " does not divide n_head ", spec.n_head),
              "set [model] n_kv_head to a divisor of n_head (grouped-query attention shares each key/value head)");
  PLAIT_CHECK(spec.family != "llama" || spec.head_dim() % 2 == 0,
              concat(either_place(model, "n_embd", "n_head"), ": [model] llama needs an even head size for RoPE, got ",
                     spec.head_dim()),
              "choose n_embd / n_head even");
}

}  // namespace

ModelSpec resolve_model_spec(const Options& model) {
  const std::string family = model.get<std::string>("family");
  const std::string size = model.get<std::string>("size");
  ModelSpec spec;
  bool found = false;
  for (const auto& s : named_sizes()) {
    if (s.spec.family == family && s.spec.size == size) {
      spec = s.spec;
      found = true;
    }
  }
  PLAIT_CHECK(found, concat(model.where("size"), ": [model] no size '", size, "' for family ", family),
              "`plait models` lists the sizes");
  for (const char* llama_only : {"n_kv_head", "ffn_hidden", "rope_theta"}) {
    PLAIT_CHECK(family == "llama" || !model.has(llama_only),
                concat(model.where(llama_only), ": [model] ", llama_only, " applies to the llama family only, not ",
                       family),
                concat("remove ", llama_only, " or set family = \"llama\""));
  }
  if (auto v = model.find<int64_t>("n_layer")) spec.n_layer = *v;
  if (auto v = model.find<int64_t>("n_head")) spec.n_head = *v;
  if (auto v = model.find<int64_t>("n_kv_head")) spec.n_kv_head = *v;
  if (family == "gpt2") spec.n_kv_head = spec.n_head;
  if (auto v = model.find<int64_t>("n_embd")) {
    spec.n_embd = *v;
    if (family == "gpt2") spec.ffn_hidden = 4 * *v;
  }
  if (auto v = model.find<int64_t>("ffn_hidden")) spec.ffn_hidden = *v;
  if (auto v = model.find<int64_t>("vocab_size")) spec.vocab_size = *v;
  if (auto v = model.find<int64_t>("block_size")) spec.block_size = *v;
  if (auto v = model.find<double>("rope_theta")) spec.rope_theta = *v;
  spec.attention = model.get<std::string>("attention");
  if (auto v = model.find<double>("norm_eps")) spec.norm_eps = *v;
  spec.dropout = model.get<double>("dropout");
  check_dimensions(spec, model);
  return spec;
}

int64_t closed_form_params(const ModelSpec& s) {
  const int64_t C = s.n_embd, L = s.n_layer, V = s.vocab_size, F = s.ffn_hidden;
  if (s.family == "gpt2") {
    // wte + wpe + L * (ln_1 2C, c_attn 3C^2+3C, attn c_proj C^2+C, ln_2 2C, c_fc CF+F, mlp c_proj FC+C) + ln_f
    const int64_t per_layer = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (C * F + F) + (F * C + C);
    return V * C + s.block_size * C + L * per_layer + 2 * C;
  }
  const int64_t Q = s.head_dim(), KV = s.n_kv_head * Q;
  // q_proj, k_proj, v_proj, o_proj, gate/up/down, two RMSNorms
  const int64_t per_layer = C * C + 2 * C * KV + C * C + 3 * C * F + 2 * C;
  return V * C /*embed_tokens*/ + L * per_layer + C /*norm*/ + V * C /*lm_head*/;
}

int64_t lookup_only_params(const ModelSpec& s) {
  return s.family == "gpt2" ? s.block_size * s.n_embd : s.vocab_size * s.n_embd;
}

double flops_per_token(const ModelSpec& s, int64_t seq_len) {
  const double n = static_cast<double>(closed_form_params(s) - lookup_only_params(s));
  return 6.0 * n + 12.0 * static_cast<double>(s.n_layer * s.n_head * s.head_dim() * seq_len);
}

}  // namespace plait
