#pragma once
// The attention core, softmax(q k^T / sqrt(d) + causal mask) v over [B, heads, T, d]:
// the part of a block that selective activation checkpointing recomputes (Korthikanti
// et al. 2022), as a module of its own so the checkpointing can find it.
//   sdpa  LibTorch's fused scaled_dot_product_attention (on CPU it keeps no T x T tensor)
//   math  the explicit product, causal mask, softmax and product: it keeps the T x T
//         softmax for backward, as Megatron's unfused core does
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace plait {

class AttentionCore final : public torch::nn::Module {
 public:
  explicit AttentionCore(std::string kernel);
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
  // Keep only q, k and v for backward, and compute the core again there.
  void recompute_in_backward(bool on) { recompute_ = on; }

 private:
  bool math_ = false;
  bool recompute_ = false;
};

// The kernel scaled_dot_product_attention picks for causal attention over tensors like
// these ("flash", "memory-efficient", "cudnn", "math", ...), as LibTorch decides it.
std::string sdpa_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

}  // namespace plait
