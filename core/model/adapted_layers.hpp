#pragma once
// [parallel] adapter: a layer factory that builds every linear through the inner factory
// and, for each one the adapter adapts, adds the adapter's layer beside it: itself around
// a dense linear, or through the tensor plugin's AdapterHost inside its split product. Every parameter it makes other than the adapters' is frozen, so the
// model trains its adapters alone under any data plugin claiming `frozen`.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plait/sdk/adapter.hpp"
#include "model/forwarding_factory.hpp"

namespace plait {

class AdaptedFactory final : public ForwardingFactory {
 public:
  AdaptedFactory(std::shared_ptr<LayerFactory> inner, Adapter& adapter);

  std::shared_ptr<Layer> linear(const LinearSpec& spec, const InitSpec& init) override;
  std::shared_ptr<Layer> fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) override;
  std::shared_ptr<Layer> embedding(const EmbeddingSpec& spec, const InitSpec& init) override;
  std::shared_ptr<Layer> norm(const NormSpec& spec, const InitSpec& init) override;

  // Every linear built so far (for Adapter::check_targets) and the full names of those adapted.
  const std::vector<LinearSpec>& linears() const { return linears_; }
  const std::vector<std::string>& adapted() const { return adapted_; }
  // Each adapter's site, as the adapter made it (the planner asks its cost of each).
  const std::vector<AdapterSite>& sites() const { return sites_; }

 private:
  // Every parameter of `layer` frozen but the adapters'.
  std::shared_ptr<Layer> frozen(std::shared_ptr<Layer> layer);
  std::shared_ptr<Layer> adapted(const std::vector<LinearSpec>& parts, const InitSpec& init);
  std::shared_ptr<Layer> make_adapter(const LinearSpec& spec, const InitSpec& init, Split split, int64_t shard,
                                      int64_t shards);

  Adapter& adapter_;
  AdapterHost* host_;  // the tensor plugin's factory's, which places adapters in its split products
  std::vector<LinearSpec> linears_;
  std::vector<std::string> adapted_;
  std::vector<AdapterSite> sites_;
  std::set<const void*> trainable_;  // the adapters' parameters (TensorImpl)
};

// The whole model's adapted linears, checked before launch: the adapter's own refusals
// (targets matching nothing), then the core's (no linear adapted at all), naming `place`
// ([parallel] adapter's line).
void check_adapted(const AdaptedFactory& factory, const Adapter& adapter, const std::string& place);

}  // namespace plait
