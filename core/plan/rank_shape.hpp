#pragma once
// One rank's share of a microbatch: the shape the planner's per-rank models (activations
// held, matrix products, memory-bound kernels) are computed from.
#include <cstdint>
#include <map>
#include <string>

#include "model/model_spec.hpp"

namespace plait {

// A block's products whose weights are frozen ([train] freeze, an adapter's base), by
// the name block_forward_gemms gives them, each as a share of the rank's blocks: their
// backward computes no weight gradient, and their input is kept for none unless an
// adapter reads it (`unread`: frozen with no trainable parameter beside them).
struct FrozenProducts {
  std::map<std::string, double> frozen, unread;
  double norms = 0;   // the share of the blocks' norms whose weights are frozen
  bool head = false;  // the output head's weight (a tied head's: the embedding's)
  bool embedding = false;  // the token (and position) embeddings' weights: no gradient reaches the first block's input
  // The adapters' (AdapterCostModel) per block, averaged over the blocks, per token of
  // their linears' input: what they keep beyond those inputs (bytes), the whole inputs
  // kept beside column splits (elements: under sequence parallel, gathered where the
  // linear itself keeps its part), their forward products (FLOPs).
  double adapter_kept_bytes = 0, adapter_column_inputs = 0, adapter_flops = 0;
  double frozen_share(const std::string& product) const;
  double unread_share(const std::string& product) const;
};

struct RankShape {
  ModelSpec model;
  int64_t seq_len = 0;
  int64_t micro_batch = 0;
  int64_t tp = 1;
  bool sequence_parallel = false;
  bool vocab_parallel = true;          // megatron's default under tp > 1
  std::string checkpointing = "none";  // "none" | "full" | "selective"
  int64_t activation_bytes_per_element = 4;  // the dtype activations are kept in
  int64_t stat_bytes_per_element = 4;        // layer norms' mean and rstd, attention's log-sum-exp
  // Autocast's bf16 casts of the products' weights, which each forward keeps for its
  // backward (2 under train.dtype = bfloat16, 0 where the weights are used as they are).
  int64_t weight_copy_bytes_per_element = 0;
  bool packed = false;  // [data] packing: rows of several documents (model/document_layout.hpp)
  FrozenProducts frozen;

  int64_t tokens() const { return seq_len * micro_batch; }
};

// Refuses a checkpointing mode other than none, full and selective.
void check_checkpointing(const std::string& mode);

}  // namespace plait
