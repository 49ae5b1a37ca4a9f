#pragma once
// The matrix products of a microbatch on one rank, by shape: what the planner's compute
// time is made of (each product at the hardware's efficiency for its size). Forward
// products per block and for the head; a backward costs each product twice (the input's
// gradient and the weight's); recomputation repeats forwards (full: the block's;
// selective: the attention core's).
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/hardware.hpp"

namespace plait {

struct Gemm {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;  // independent products of this shape (the attention core's heads)
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch); }
};

struct GemmQuery {
  ModelSpec model;
  int64_t seq_len = 0;
  int64_t micro_batch = 0;
  int64_t tp = 1;
};

// One block's forward products on a rank: projections split over tp, and the attention
// core's two per head (scores and their product with the values, counted whole as
// Megatron and PaLM count them).
std::vector<Gemm> block_forward_gemms(const GemmQuery& q);
// The head's: the logits over this rank's slice of the vocabulary.
std::vector<Gemm> head_forward_gemms(const GemmQuery& q);

// FLOPs of one microbatch's forward, backward and recomputation on a rank holding
// `blocks` blocks (and the head when `with_head`), under "none", "full" or "selective".
double microbatch_flops(const GemmQuery& q, int64_t blocks, bool with_head, const std::string& checkpointing);

// Seconds for the products at the hardware's peak (bf16) and its efficiency by the
// products' smallest dimension.
double gemm_seconds(const Hardware& hw, const Gemm& g);

}  // namespace plait
