#include "plan/activation_memory.hpp"

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr int64_t kMaskBytes = 1;   // a bool per element
constexpr int64_t kIndexBytes = 8;  // int64 token ids

struct Dims {
  int64_t tokens;   // N = s * b
  int64_t on_part;  // tokens of this rank's sequence part (N / tp under sequence parallel)
  int64_t h, ffn, kv, vocab, heads_here, s, b, e, stat, tp;
  bool llama;
};

Dims dims_of(const RankShape& q) {
  const ModelSpec& m = q.model;
  const int64_t n = q.tokens();
  return {n,
          q.sequence_parallel ? n / q.tp : n,
          m.n_embd,
          m.ffn_hidden,
          m.n_kv_head * m.head_dim(),
          m.vocab_size,
          m.n_head / q.tp,
          q.seq_len,
          q.micro_batch,
          q.activation_bytes_per_element,
          q.stat_bytes_per_element,
          q.tp,
          m.family == "llama"};
}

// A norm's own tensors, on the sequence part: LayerNorm its output with a mean and an
// rstd per token; Llama's RMSNorm its normalised input and its output with an rstd per
// token (its input is the previous tensor's).
int64_t norm_bytes(const Dims& d) {
  return d.llama ? 2 * d.on_part * d.h * d.e + d.on_part * d.stat : d.on_part * d.h * d.e + 2 * d.on_part * d.stat;
}

// What the attention core keeps unless selective checkpointing recomputes it: the fused
// kernel its log-sum-exp per head and position; the math path its softmax and the causal
// mask it builds.
int64_t attention_core_bytes(const RankShape& q, const Dims& d) {
  if (q.model.attention == "sdpa") return d.b * d.heads_here * d.s * d.stat;
  // Packed rows' mask is the layout's, made once for every block (per_stage_bytes).
  return d.heads_here * d.s * d.s * d.b * d.e + (q.packed ? 0 : d.s * d.s * kMaskBytes);
}

// The block's tensors split over tp, in elements. Both keep the attention's output (the
// fused kernel returns it already in the layout the output projection takes; the math
// path copies it and drops its own). GPT-2 keeps its fused qkv's size (the fused kernel
// keeps views of it; the math path's products copy q, k and v out of it). Llama keeps q
// after the rotation and k and v at every head: repeated (grouped query), or k after the
// rotation with v, which the fused kernel keeps as a view of the fused qkv (so all of
// it) and the math path copies. Then its fused gate/up output, silu's and the product.
int64_t split_elements(const RankShape& q, const Dims& d) {
  const int64_t attention_out = d.tokens * d.h;
  if (!d.llama) return 3 * d.tokens * d.h + attention_out + 2 * d.tokens * d.ffn;
  const bool viewed_v = d.kv == d.h && q.model.attention == "sdpa";
  const int64_t keys_values = viewed_v ? d.tokens * d.kv + d.tokens * (d.h + 2 * d.kv) : 2 * d.tokens * d.h;
  return d.tokens * d.h + keys_values + attention_out + 4 * d.tokens * d.ffn;
}

// The elements of a block's product weights on this rank (column parts and their biases
// split over tp, row parts split and their biases whole): what autocast casts.
int64_t block_weight_elements(const Dims& d) {
  if (d.llama) return (2 * d.h * d.h + 2 * d.h * d.kv + 3 * d.h * d.ffn) / d.tp;
  return (4 * d.h * d.h + 2 * d.h * d.ffn + 3 * d.h + d.ffn) / d.tp + 2 * d.h;
}

// What frozen weights leave unkept (FrozenProducts): a product's input is kept for its
// weight's gradient, so a frozen linear that no adapter reads keeps none of it where
// nothing else does: GPT-2's and Llama's norm outputs (the projections' and the MLP's
// input), the MLP's activation (GELU's output, SiLU's product), and the attention's
// output on the math path (the fused kernel keeps its own). A frozen RMSNorm weight
// keeps no normalised input for its gradient.
double unkept_by_frozen(const RankShape& q, const Dims& d) {
  const FrozenProducts& f = q.frozen;
  const double norm_out = static_cast<double>(d.on_part * d.h * d.e);
  const double mlp_activation = static_cast<double>(d.tokens * d.ffn / d.tp * d.e);
  const double attention_out = q.model.attention == "math" ? static_cast<double>(d.tokens * d.h / d.tp * d.e) : 0.0;
  if (d.llama) {
    return norm_out * (f.unread_share("qkv") + f.unread_share("gate_up") + 2 * f.norms) +
           mlp_activation * f.unread_share("down") + attention_out * f.unread_share("o_proj");
  }
  return norm_out * (f.unread_share("c_attn") + f.unread_share("c_fc")) +
         mlp_activation * f.unread_share("mlp.c_proj") + attention_out * f.unread_share("attn.c_proj");
}

int64_t block_bytes(const RankShape& q, const Dims& d) {
  if (q.checkpointing == "full") return d.on_part * d.h * d.e;  // the block's output, the next one's input
  // On the sequence part: the two norms, the residual after attention, the block's output.
  int64_t bytes = 2 * norm_bytes(d) + 2 * d.on_part * d.h * d.e - static_cast<int64_t>(unkept_by_frozen(q, d));
  // The adapters read whole sequences (gathered under sequence parallel, where their
  // column linears keep only the part: the rest of the whole is theirs).
  bytes += static_cast<int64_t>(static_cast<double>(d.tokens) * q.frozen.adapter_kept_bytes +
                                static_cast<double>((d.tokens - d.on_part) * d.e) * q.frozen.adapter_column_inputs);
  bytes += split_elements(q, d) / d.tp * d.e;
  if (q.model.dropout > 0) bytes += 2 * d.on_part * d.h * kMaskBytes;
  if (q.checkpointing != "selective") bytes += attention_core_bytes(q, d);
  return bytes + block_weight_elements(d) * q.weight_copy_bytes_per_element;
}

int64_t embedding_bytes(const RankShape& q, const Dims& d) {
  // Behind frozen embeddings, with frozen norms, no gradient reaches the first block's
  // input: its first norm keeps neither that input nor its statistics.
  if (q.frozen.embedding && q.frozen.norms == 1 && q.checkpointing != "full") {
    return d.tp > 1 && q.vocab_parallel ? d.tokens * (kIndexBytes + kMaskBytes) : 0;
  }
  int64_t bytes = d.on_part * d.h * d.e;
  if (q.model.dropout > 0) bytes += d.on_part * d.h * kMaskBytes;
  // Under a vocab-parallel embedding: the ids shifted into this rank's slice, and which fall in it.
  if (d.tp > 1 && q.vocab_parallel) bytes += d.tokens * (kIndexBytes + kMaskBytes);
  return bytes;
}

int64_t head_bytes(const RankShape& q, const Dims& d) {
  int64_t bytes = norm_bytes(d);
  if (d.tp > 1 && q.vocab_parallel) {
    // The logits' slice and the vocab-parallel loss's softmax over it, the target's
    // index in the slice and two masks per token.
    bytes += 2 * d.tokens * d.vocab / d.tp * d.e + d.tokens * (kIndexBytes + 2 * kMaskBytes);
  } else {
    bytes += 2 * d.tokens * d.vocab * d.e;  // the logits and log_softmax's output
  }
  const int64_t vocab_here = d.tp > 1 && q.vocab_parallel ? d.vocab / d.tp : d.vocab;
  return bytes + vocab_here * d.h * q.weight_copy_bytes_per_element;
}

// Packed rows (document_layout.hpp): the [b, 1, s, s] mask, shared by the blocks. Without
// checkpointing the fused kernel keeps its additive form in the activations' dtype and
// the math path its negation (bool); a checkpointed forward keeps only the batch's [b, s]
// document index for its recomputation, which makes the mask again. Llama's q and k
// rotate by rows of cos and sin gathered per position, [b, 1, s, Q] each, kept unless the
// whole block is recomputed.
int64_t per_stage_bytes(const RankShape& q, const Dims& d) {
  if (!q.packed) return 0;
  const int64_t mask = d.b * d.s * d.s;
  int64_t bytes = q.checkpointing != "none"           ? 0
                  : q.model.attention == "sdpa" ? mask * d.e
                                                : mask * kMaskBytes;
  if (d.llama && q.checkpointing != "full") bytes += 2 * d.b * d.s * q.model.head_dim() * d.e;
  return bytes;
}

}  // namespace

ActivationBytes predict_activation_bytes(const RankShape& q) {
  PLAIT_CHECK(q.model.family == "gpt2" || q.model.family == "llama",
              concat("the activation model knows gpt2 and llama blocks, not ", q.model.family),
              "measure it instead: the run's metrics.jsonl has activation_bytes");
  check_checkpointing(q.checkpointing);
  PLAIT_CHECK(q.tp >= 1 && q.model.n_head % q.tp == 0 && q.model.n_kv_head % q.tp == 0 &&
                  q.seq_len % (q.sequence_parallel ? q.tp : 1) == 0,
              concat("tp ", q.tp, " does not split ", q.model.n_head, " heads, ", q.model.n_kv_head,
                     " key/value heads and ", q.seq_len, " positions"),
              "");
  const Dims d = dims_of(q);
  return {block_bytes(q, d), embedding_bytes(q, d), head_bytes(q, d), per_stage_bytes(q, d)};
}

}  // namespace plait
