#pragma once
// One rank's share of a microbatch: the shape the planner's per-rank models (activations
// held, matrix products, memory-bound kernels) are computed from.
#include <cstdint>
#include <string>

#include "model/model_spec.hpp"

namespace plait {

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

  int64_t tokens() const { return seq_len * micro_batch; }
};

// Refuses a checkpointing mode other than none, full and selective.
void check_checkpointing(const std::string& mode);

}  // namespace plait
