#pragma once
// A layer factory that passes every call to another: the base of the core's wrappers
// (an adapter's layers beside the linears, the record of which parameters are linears'),
// each overriding only what it changes.
#include <memory>
#include <string_view>
#include <vector>

#include "plait/sdk/layers.hpp"

namespace plait {

class ForwardingFactory : public LayerFactory {
 public:
  explicit ForwardingFactory(std::shared_ptr<LayerFactory> inner) : inner_(std::move(inner)) {}

  std::shared_ptr<Layer> linear(const LinearSpec& spec, const InitSpec& init) override { return inner_->linear(spec, init); }
  std::shared_ptr<Layer> fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) override {
    return inner_->fused_linear(parts, init);
  }
  std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init) override {
    return inner_->embedding(spec, init);
  }
  std::shared_ptr<Layer> tied_linear(const std::shared_ptr<Layer>& embedding) override {
    return inner_->tied_linear(embedding);
  }
  std::shared_ptr<Layer> norm(const NormSpec& spec, const InitSpec& init) override { return inner_->norm(spec, init); }
  int64_t shard_count() const override { return inner_->shard_count(); }
  std::shared_ptr<Layer> blocks_entry() override { return inner_->blocks_entry(); }
  int64_t sequence_shards() const override { return inner_->sequence_shards(); }
  int64_t sequence_shard() const override { return inner_->sequence_shard(); }
  at::Tensor token_loss_sum(const at::Tensor& logits, const at::Tensor& targets) override {
    return inner_->token_loss_sum(logits, targets);
  }
  at::Tensor whole_logits(const at::Tensor& logits) override { return inner_->whole_logits(logits); }
  void* find_extension(std::string_view id) override { return inner_->find_extension(id); }

 protected:
  std::shared_ptr<LayerFactory> inner_;
};

}  // namespace plait
