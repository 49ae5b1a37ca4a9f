#include "plan/activation_memory.hpp"

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr int64_t kMaskBytes = 1;   // a bool per element
constexpr int64_t kIndexBytes = 8;  // int64 token ids

struct Dims {
  int64_t tokens;      // N = s * b
  int64_t on_part;     // tokens of this rank's sequence part (N / tp under sequence parallel)
  int64_t h, ffn, vocab, heads_here, s, b, e, stat, tp;
};

Dims dims_of(const ActivationQuery& q) {
  const ModelSpec& m = q.model;
  const int64_t n = q.seq_len * q.micro_batch;
  return {n,       q.sequence_parallel ? n / q.tp : n, m.n_embd, m.ffn_hidden, m.vocab_size, m.n_head / q.tp,
          q.seq_len, q.micro_batch, q.activation_bytes_per_element, q.stat_bytes_per_element, q.tp};
}

// What the attention core keeps unless selective checkpointing recomputes it: the fused
// kernel its log-sum-exp per head and position; the math path its softmax and the causal
// mask it builds.
int64_t attention_core_bytes(const ActivationQuery& q, const Dims& d) {
  if (q.model.attention == "sdpa") return d.b * d.heads_here * d.s * d.stat;
  return d.heads_here * d.s * d.s * d.b * d.e + d.s * d.s * kMaskBytes;
}

int64_t block_bytes(const ActivationQuery& q, const Dims& d) {
  if (q.checkpointing == "full") return d.on_part * d.h * d.e;  // the block's output, the next one's input
  // On the sequence part (whole under plain tp): ln_1's output, the residual after
  // attention, ln_2's output, the block's output. Split over tp: the fused qkv, the
  // attention's output (the fused kernel's is already in the layout c_proj takes; the
  // math path's is copied), c_fc's output and gelu's.
  int64_t bytes = 4 * d.on_part * d.h * d.e + (4 * d.tokens * d.h + 2 * d.tokens * d.ffn) / d.tp * d.e;
  bytes += 2 * 2 * d.on_part * d.stat;  // two layer norms' mean and rstd
  if (q.model.dropout > 0) bytes += 2 * d.on_part * d.h * kMaskBytes;
  if (q.checkpointing != "selective") bytes += attention_core_bytes(q, d);
  return bytes;
}

int64_t embedding_bytes(const ActivationQuery& q, const Dims& d) {
  int64_t bytes = d.on_part * d.h * d.e;
  if (q.model.dropout > 0) bytes += d.on_part * d.h * kMaskBytes;
  // Under a vocab-parallel embedding: the ids shifted into this rank's slice, and which fall in it.
  if (d.tp > 1 && q.vocab_parallel) bytes += d.tokens * (kIndexBytes + kMaskBytes);
  return bytes;
}

int64_t head_bytes(const ActivationQuery& q, const Dims& d) {
  int64_t bytes = d.on_part * d.h * d.e + 2 * d.on_part * d.stat;  // ln_f
  if (d.tp > 1 && q.vocab_parallel) {
    // The logits' slice and the vocab-parallel loss's softmax over it, the target's
    // index in the slice and two masks per token.
    bytes += 2 * d.tokens * d.vocab / d.tp * d.e + d.tokens * (kIndexBytes + 2 * kMaskBytes);
  } else {
    bytes += 2 * d.tokens * d.vocab * d.e;  // the logits and log_softmax's output
  }
  return bytes;
}

}  // namespace

ActivationBytes predict_activation_bytes(const ActivationQuery& q) {
  PLAIT_CHECK(q.model.family == "gpt2",
              concat("the activation model knows gpt2 blocks, not ", q.model.family, " yet"),
              "measure it instead: the run's metrics.jsonl has activation_bytes");
  PLAIT_CHECK(q.checkpointing == "none" || q.checkpointing == "full" || q.checkpointing == "selective",
              concat("activation checkpointing '", q.checkpointing, "' is not one of none, full, selective"), "");
  PLAIT_CHECK(q.tp >= 1 && q.model.n_head % q.tp == 0 && q.seq_len % (q.sequence_parallel ? q.tp : 1) == 0,
              concat("tp ", q.tp, " does not split ", q.model.n_head, " heads and ", q.seq_len, " positions"), "");
  const Dims d = dims_of(q);
  return {block_bytes(q, d), embedding_bytes(q, d), head_bytes(q, d)};
}

}  // namespace plait
