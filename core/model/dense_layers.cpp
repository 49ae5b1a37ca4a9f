#include "model/dense_layers.hpp"

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"
#include "plait/sdk/init.hpp"

namespace plait {
namespace {

class DenseLinear final : public Layer {
 public:
  DenseLinear(const LinearSpec& spec, const InitSpec& init) {
    weight_ = register_parameter(
        "weight", seeded_normal({spec.out_features, spec.in_features}, spec.init_std, init.seed,
                                spec.name + ".weight", init.options));
    if (spec.bias) {
      bias_ = register_parameter("bias", filled({spec.out_features}, 0.0, init.options));
    }
  }
  at::Tensor forward(const at::Tensor& x) override { return at::linear(x, weight_, bias_); }

 private:
  at::Tensor weight_;
  at::Tensor bias_;
};

class DenseEmbedding final : public Layer {
 public:
  DenseEmbedding(const EmbeddingSpec& spec, const InitSpec& init) {
    weight_ = register_parameter(
        "weight", seeded_normal({spec.num_embeddings, spec.dim}, spec.init_std, init.seed,
                                spec.name + ".weight", init.options));
  }
  at::Tensor forward(const at::Tensor& ids) override { return at::embedding(weight_, ids); }
  const at::Tensor& weight() const { return weight_; }

 private:
  at::Tensor weight_;
};

// Reads the embedding's weight at every call (not a copy), so the two stay one parameter.
class TiedLinear final : public Layer {
 public:
  explicit TiedLinear(std::shared_ptr<DenseEmbedding> embedding) : embedding_(std::move(embedding)) {}
  at::Tensor forward(const at::Tensor& x) override { return at::linear(x, embedding_->weight()); }

 private:
  std::shared_ptr<DenseEmbedding> embedding_;
};

class DenseLayerFactory final : public LayerFactory {
 public:
  std::shared_ptr<Layer> linear(const LinearSpec& spec, const InitSpec& init) override {
    return std::make_shared<DenseLinear>(spec, init);
  }
  std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init) override {
    return std::make_shared<DenseEmbedding>(spec, init);
  }
  std::shared_ptr<Layer> tied_linear(const std::shared_ptr<Layer>& embedding) override {
    auto dense = std::dynamic_pointer_cast<DenseEmbedding>(embedding);
    PLAIT_CHECK(dense != nullptr, "tied_linear needs an embedding made by the same factory",
                "a layer factory ties only its own embeddings");
    return std::make_shared<TiedLinear>(std::move(dense));
  }
};

}  // namespace

std::shared_ptr<LayerFactory> make_dense_layer_factory() { return std::make_shared<DenseLayerFactory>(); }

}  // namespace plait
