#pragma once
// Model dimensions: the named sizes of each family, overrides from [model], and the
// closed-form counts the planner, MFU and tests rely on.
//
// Dimension letters (as in llm.c): L layers, C = n_embd, H heads, Q = C/H head size,
// V vocabulary, T sequence length, F SwiGLU hidden size.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plait/sdk/options.hpp"

namespace plait {

struct ModelSpec {
  std::string family;  // "gpt2" | "llama"
  std::string size;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;   // llama; equals n_head for gpt2
  int64_t n_embd = 0;
  int64_t ffn_hidden = 0;  // llama; 4C for gpt2
  int64_t vocab_size = 0;
  int64_t block_size = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  std::string attention = "sdpa";  // the attention core's kernel: "sdpa" or "math"
  double dropout = 0.0;            // residual-stream dropout (model/dropout.hpp)

  int64_t head_dim() const { return n_embd / n_head; }
};

struct NamedSize {
  ModelSpec spec;
  std::string reference;                   // the published model these dimensions follow
  std::optional<int64_t> published_params;  // its published parameter count, where one exists
};

const std::vector<NamedSize>& named_sizes();

// The size named in [model] with its overrides applied, checked for consistency; errors
// start at the config line to change.
ModelSpec resolve_model_spec(const Options& model_table);

// Where a model dimension was set, for the front of a message: its own line when the
// config sets it, else the line of the `size` that filled it in.
std::string model_place(const Options& model_table, const std::string& key);

// Every resolved dimension (family, n_layer, n_head, n_kv_head, n_embd, ffn_hidden,
// vocab_size, block_size) as a table whose places are model_place's: what a plugin's
// check sees (plait/sdk/run_check.hpp).
Options model_dimensions(const ModelSpec& spec, const Options& model_table);

// Trainable parameters, from the dimensions alone.
int64_t closed_form_params(const ModelSpec& spec);
// Parameters used only as lookup tables (gpt2's wpe, llama's embed_tokens): they cost no
// FLOPs per token. gpt2's wte is not among them: the tied head multiplies by it.
int64_t lookup_only_params(const ModelSpec& spec);
// Training FLOPs per token (PaLM appendix B): 6N + 12*L*H*Q*T, N = params - lookup_only.
double flops_per_token(const ModelSpec& spec, int64_t seq_len);

}  // namespace plait
