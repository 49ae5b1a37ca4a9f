#pragma once
// Activation checkpointing (train.activation_checkpointing): trade compute for memory.
//   full       every block keeps only its input during forward; backward runs the
//              block's forward again (with grad) and backpropagates through it. This
//              is the reentrant scheme of torch.utils.checkpoint: the parameters'
//              gradients arrive through a nested backward, so gradient hooks (DDP
//              buckets, ZeRO/FSDP reduce-scatters) fire as usual.
//   selective  only the attention core (q k^T, mask, softmax, times v) is recomputed:
//              it keeps q, k and v, not its T x T intermediates (Korthikanti et al.'s
//              selective recomputation; it matters with [model] attention = "math",
//              since the fused sdpa kernel keeps no T x T tensor on CPU).
//   none       nothing is recomputed.
// The trainer applies it after the model is built and before data parallel wraps the
// units, so a sharding plugin gathers a block's parameters around the recomputation too.
#include <string>

#include "plait/sdk/model.hpp"

namespace plait {

void apply_activation_checkpointing(StageModel& model, const std::string& mode);

}  // namespace plait
