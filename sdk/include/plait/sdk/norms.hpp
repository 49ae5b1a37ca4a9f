#pragma once
// Normalisation layers, as the reference models compute them. The functions are the
// math alone, so a layer factory that must treat the parameters specially (sequence
// parallel sums their gradients over the tp ranks) computes exactly the same thing.
#include <ATen/ATen.h>

#include "plait/sdk/init.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// torch.nn.LayerNorm(dim, eps, bias=True).
inline at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  return at::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

// Hugging Face LlamaRMSNorm: normalise in float32, scale in the input's type.
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const auto in_type = x.scalar_type();
  at::Tensor h = in_type == at::kDouble ? x : x.to(at::kFloat);
  h = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(in_type);
}

class LayerNorm final : public Layer {
 public:
  LayerNorm(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
    weight_ = register_parameter("weight", filled({dim}, 1.0, options));
    bias_ = register_parameter("bias", filled({dim}, 0.0, options));
  }
  at::Tensor forward(const at::Tensor& x) override { return layer_norm(x, weight_, bias_, eps_); }

 private:
  double eps_;
  at::Tensor weight_, bias_;
};

class RMSNorm final : public Layer {
 public:
  RMSNorm(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
    weight_ = register_parameter("weight", filled({dim}, 1.0, options));
  }
  at::Tensor forward(const at::Tensor& x) override { return rms_norm(x, weight_, eps_); }

 private:
  double eps_;
  at::Tensor weight_;
};

}  // namespace plait
