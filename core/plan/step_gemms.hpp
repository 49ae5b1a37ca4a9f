#pragma once
// The matrix products of a microbatch on one rank, by shape: what the planner's compute
// time is made of (each product at the hardware's efficiency for its size). Forward
// products per block and for the head; a backward costs each product twice (the input's
// gradient and the weight's); recomputation repeats forwards (full: the block's;
// selective: the attention core's).
#include <cstdint>
#include <string>
#include <vector>

#include "plan/hardware.hpp"
#include "plan/rank_shape.hpp"

namespace plait {

struct Gemm {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;  // independent products of this shape (the attention core's heads)
  bool attention = false;  // the attention core's, which a fused kernel computes
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch); }
};

// One block's forward products on a rank: projections split over tp, and the attention
// core's two per head (scores and their product with the values, counted whole as
// Megatron and PaLM count them).
std::vector<Gemm> block_forward_gemms(const RankShape& q);
// The head's: the logits over this rank's slice of the vocabulary.
std::vector<Gemm> head_forward_gemms(const RankShape& q);

// FLOPs of one microbatch's forward, backward and recomputation (the shape's
// checkpointing) on a rank holding `blocks` blocks, and the head when `with_head`.
double microbatch_flops(const RankShape& q, int64_t blocks, bool with_head);

// Seconds for the products at the hardware's peak (bf16) and its efficiency by the
// products' smallest dimension (the attention core's at the fused kernel's measured
// efficiency, where the hardware file has it).
double gemm_seconds(const Hardware& hw, const Gemm& g);

// Seconds of the products microbatch_flops counts, each at its own efficiency.
double microbatch_gemm_seconds(const Hardware& hw, const RankShape& q, int64_t blocks, bool with_head);

}  // namespace plait
