#pragma once
// The bytes one microbatch's forward leaves held for its backward on one rank: what the
// pipeline executor measures as `activation_bytes` (what the forward's thread allocated
// during it and still holds), predicted from the model's shape. Korthikanti et al.'s per-layer terms,
// counted for plait's own layers tensor by tensor (docs/planner.md, "Activations"):
// GPT-2 and Llama blocks, with tensor and sequence parallel, math or fused attention,
// dropout, and no, full or selective checkpointing.
#include <cstdint>
#include <string>

#include "plan/rank_shape.hpp"

namespace plait {

struct ActivationBytes {
  int64_t per_block = 0;
  int64_t embedding = 0;  // the embeddings' output, its dropout mask, tp's masked ids
  int64_t head = 0;       // the final norm, the logits and what the loss keeps
  // Packed rows: what every stage's forward keeps once for all its blocks (the document
  // mask, llama's rotary rows gathered by position).
  int64_t per_stage = 0;
  int64_t total(int64_t blocks) const { return embedding + blocks * per_block + head + per_stage; }
};

// Refuses a family it does not model yet and a checkpointing mode it does not know.
ActivationBytes predict_activation_bytes(const RankShape& q);

}  // namespace plait
