#pragma once
// Megatron's tensor-parallel layers. A column-parallel linear keeps out/t rows of the
// weight (each of a fused q|k|v's parts split alike) and needs its input whole; a
// row-parallel linear keeps in/t columns, takes the column layer's split output and
// all-reduces its partial sums (or, under sequence parallel, reduce-scatters them over
// the positions). Weights are the reference model's, sliced: each rank
// draws the whole parameter from its per-name seed and keeps its part.
#include <memory>
#include <vector>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/layers.hpp"

namespace plait::megatron {

struct TpPlace {
  Communicator* group = nullptr;  // null: a single tp rank
  int64_t rank = 0, ways = 1;
  // Token embedding and output head split along the vocabulary, with the loss computed
  // on the slices ([megatron] vocab_parallel).
  bool vocab_parallel = false;
  // Between the tensor-parallel regions (norms, residual adds) each rank holds 1/t of
  // the positions; column layers all-gather them, row layers reduce-scatter into them
  // ([megatron] sequence_parallel, Korthikanti et al. 2022).
  bool sequence_parallel = false;
};

std::shared_ptr<Layer> column_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp);
// A column product's input made whole and kept (its gradient summed over the ranks, or
// under sequence parallel the positions gathered and the gradient reduce-scattered back),
// and a row product's partial sums summed (or reduce-scattered over the positions).
at::Tensor column_input(const at::Tensor& x, const TpPlace& tp);
at::Tensor row_output(const at::Tensor& partial, const TpPlace& tp);
// Column-parallel linears reading one input (fused): the input made whole once.
std::shared_ptr<Layer> column_group(const std::vector<LinearSpec>& specs, const InitSpec& init, const TpPlace& tp);
std::shared_ptr<Layer> row_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp);
std::shared_ptr<Layer> replicated_linear(const LinearSpec& spec, const InitSpec& init, const TpPlace& tp);
// Under sequence parallel: a replicated layer (a norm) run on this rank's positions, its
// parameters' gradients marked partial over tp, and the layer that splits the sequence
// before the blocks.
std::shared_ptr<Layer> on_sequence_part(std::shared_ptr<Layer> layer, const TpPlace& tp);
std::shared_ptr<Layer> sequence_entry(const TpPlace& tp);
// Split along the vocabulary when the spec allows it and tp.vocab_parallel; else replicated.
std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init, const TpPlace& tp);
// x E^T with the weight of an embedding made by embedding(): vocabulary slices of the
// logits when that embedding is split.
std::shared_ptr<Layer> tied_head(const std::shared_ptr<Layer>& embedding, const TpPlace& tp);
// Sum of token losses from each rank's vocabulary slice of the logits (collective).
at::Tensor vocab_token_loss_sum(const at::Tensor& logits, const at::Tensor& targets, Communicator* tp);
// Whole logits from the slices (collective, no gradient).
at::Tensor gather_vocab(const at::Tensor& logits, Communicator* tp);

}  // namespace plait::megatron
