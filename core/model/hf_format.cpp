#include "model/hf_format.hpp"

namespace plait {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool hf_transposed(const std::string& family, const std::string& name) {
  if (family != "gpt2") return false;
  for (const char* conv1d : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    if (ends_with(name, conv1d)) return true;
  }
  return false;
}

nlohmann::ordered_json hf_config(const ModelSpec& s, const std::string& torch_dtype) {
  if (s.family == "gpt2") {
    return {{"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"vocab_size", s.vocab_size},
            {"n_positions", s.block_size},
            {"n_ctx", s.block_size},
            {"n_embd", s.n_embd},
            {"n_layer", s.n_layer},
            {"n_head", s.n_head},
            {"n_inner", s.ffn_hidden},
            {"activation_function", "gelu"},  // plait's (and nanoGPT's) exact GELU
            {"layer_norm_epsilon", s.norm_eps},
            {"resid_pdrop", 0.0},
            {"embd_pdrop", 0.0},
            {"attn_pdrop", 0.0},
            {"tie_word_embeddings", true},
            {"bos_token_id", nullptr},  // GPT-2's 50256 is outside a smaller vocabulary
            {"eos_token_id", nullptr},
            {"torch_dtype", torch_dtype}};
  }
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", s.vocab_size},
          {"hidden_size", s.n_embd},
          {"intermediate_size", s.ffn_hidden},
          {"num_hidden_layers", s.n_layer},
          {"num_attention_heads", s.n_head},
          {"num_key_value_heads", s.n_kv_head},
          {"head_dim", s.head_dim()},
          {"max_position_embeddings", s.block_size},
          {"rms_norm_eps", s.norm_eps},
          {"rope_theta", s.rope_theta},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"tie_word_embeddings", false},
          {"bos_token_id", nullptr},
          {"eos_token_id", nullptr},
          {"torch_dtype", torch_dtype}};
}

nlohmann::ordered_json model_to_json(const ModelSpec& s) {
  return {{"family", s.family},         {"size", s.size},         {"n_layer", s.n_layer},
          {"n_head", s.n_head},         {"n_kv_head", s.n_kv_head}, {"n_embd", s.n_embd},
          {"ffn_hidden", s.ffn_hidden}, {"vocab_size", s.vocab_size}, {"block_size", s.block_size},
          {"rope_theta", s.rope_theta}, {"norm_eps", s.norm_eps}};
}

ModelSpec model_from_json(const nlohmann::json& j) {
  ModelSpec s;
  s.family = j.at("family").get<std::string>();
  s.size = j.at("size").get<std::string>();
  s.n_layer = j.at("n_layer").get<int64_t>();
  s.n_head = j.at("n_head").get<int64_t>();
  s.n_kv_head = j.at("n_kv_head").get<int64_t>();
  s.n_embd = j.at("n_embd").get<int64_t>();
  s.ffn_hidden = j.at("ffn_hidden").get<int64_t>();
  s.vocab_size = j.at("vocab_size").get<int64_t>();
  s.block_size = j.at("block_size").get<int64_t>();
  s.rope_theta = j.at("rope_theta").get<double>();
  s.norm_eps = j.at("norm_eps").get<double>();
  return s;
}

}  // namespace plait
