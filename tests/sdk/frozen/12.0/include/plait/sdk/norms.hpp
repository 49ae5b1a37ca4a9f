#pragma once
// Normalisation layers over the last dimension, as the reference models compute them.
#include <ATen/ATen.h>

#include "plait/sdk/init.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// torch.nn.LayerNorm(dim, eps, bias=True).
class LayerNorm final : public Layer {
 public:
  LayerNorm(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
    weight_ = register_parameter("weight", filled({dim}, 1.0, options));
    bias_ = register_parameter("bias", filled({dim}, 0.0, options));
  }
  at::Tensor forward(const at::Tensor& x) override { return at::layer_norm(x, {weight_.size(0)}, weight_, bias_, eps_); }

 private:
  double eps_;
  at::Tensor weight_, bias_;
};

// Hugging Face LlamaRMSNorm: normalise in float32, scale in the input's type.
class RMSNorm final : public Layer {
 public:
  RMSNorm(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
    weight_ = register_parameter("weight", filled({dim}, 1.0, options));
  }
  at::Tensor forward(const at::Tensor& x) override {
    const auto in_type = x.scalar_type();
    at::Tensor h = in_type == at::kDouble ? x : x.to(at::kFloat);
    h = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
    return weight_ * h.to(in_type);
  }

 private:
  double eps_;
  at::Tensor weight_;
};

}  // namespace plait
