#pragma once
// The memory-bound kernels of a microbatch on one rank: norms, activations, residual
// adds, dropout, the attention's softmax where it is materialised, casts, the loss. Their
// time is the bytes they read and write at the memory's achieved bandwidth; what they are
// depends on the implementation (plait's eager layers under autocast, or another
// framework's fused kernels), so an inventory lists them, each by the tensor it runs over.
#include <string>
#include <vector>

#include "plan/hardware.hpp"
#include "plan/rank_shape.hpp"

namespace plait {

// What a kernel runs over, per microbatch on a rank.
enum class Extent {
  hidden,        // the rank's sequence part × hidden size (the whole sequence without sequence parallel)
  split_hidden,  // tokens × hidden / tp (the attention's heads on this rank)
  split_kv,      // tokens × the keys' (or values') size / tp
  ffn,           // tokens × the MLP's hidden size / tp
  scores,        // micro_batch × heads / tp × seq_len² (a materialised attention matrix)
  logits,        // tokens × vocabulary / tp
  params,        // the part's parameters on this rank (a block's, or the head's)
};

struct MemoryKernel {
  std::string name;
  Extent extent = Extent::hidden;
  double forward_bytes = 0;   // read and written per element in the forward
  double backward_bytes = 0;  // in the backward
  bool attention_core = false;  // recomputed under selective checkpointing
  bool activation = false;      // the MLP's GELU or SiLU (hardware's activation_gelems)
};

struct KernelInventory {
  std::string name;  // "plait eager (autocast bf16, sdpa)", "Megatron-LM 2021 fused"
  std::vector<MemoryKernel> block, head;
};

// plait's own layers (train.dtype = "bfloat16": float32 parameters and residual stream,
// autocast's bf16 products, its float32 norms and softmax; float32 or float64: one dtype
// throughout, no casts), for the shape's family, attention kernel and dropout.
KernelInventory plait_kernels(const RankShape& shape);

// Elements of `extent` per microbatch on the rank (`head`: for the head's parameters).
double extent_elements(const RankShape& shape, Extent extent, bool head);

// Seconds of one microbatch's memory-bound kernels on a rank holding `blocks` blocks (and
// the head when `with_head`): forward, backward and the shape's recomputation.
double memory_bound_seconds(const Hardware& hw, const KernelInventory& kernels, const RankShape& shape, int64_t blocks,
                            bool with_head);

}  // namespace plait
