#pragma once
// A factory that notes which parameters are linears' weights (the matrices of linear
// and fused_linear, not their biases, not a tied head's embedding): [train] frozen_dtype
// stores those of them that are frozen in bf16, the type autocast reads them in anyway.
#include <set>

#include "model/forwarding_factory.hpp"

namespace plait {

class RecordedLinears final : public ForwardingFactory {
 public:
  using ForwardingFactory::ForwardingFactory;

  std::shared_ptr<Layer> linear(const LinearSpec& spec, const InitSpec& init) override;
  std::shared_ptr<Layer> fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) override;

  // The weights' TensorImpl, each parameter once.
  const std::set<const void*>& weights() const { return weights_; }

 private:
  std::shared_ptr<Layer> recorded(std::shared_ptr<Layer> layer);
  std::set<const void*> weights_;
};

}  // namespace plait
