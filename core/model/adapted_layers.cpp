#include "model/adapted_layers.hpp"

#include <set>

#include "model/dropout.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// A linear with its adapter beside it: the base's parameters and children keep their
// names (WrappingLayer), the adapter's are registered under the same module, and the
// adapter's output is added to the base's.
class AdaptedLinear final : public WrappingLayer {
 public:
  AdaptedLinear(std::shared_ptr<Layer> base, std::shared_ptr<Layer> adapter)
      : WrappingLayer(std::move(base)), adapter_(std::move(adapter)) {
    for (const auto& child : adapter_->named_children()) {
      PLAIT_CHECK(!named_children().contains(child.key()),
                  concat("the adapter's layer '", child.key(), "' has the name of a part of the linear it adapts"),
                  "name adapter layers apart from the linear's own (lora_A, lora_B)");
      register_module(child.key(), child.value());
    }
    for (const auto& p : adapter_->named_parameters(/*recurse=*/false)) {
      own_.insert(p.key());
      register_parameter(p.key(), p.value(), p.value().requires_grad());
    }
  }
  at::Tensor forward(const at::Tensor& x) override { return inner_->forward(x) + adapter_->forward(x); }
  TensorSplit split_of(const std::string& local_name) const override {
    return own_.count(local_name) != 0 ? adapter_->split_of(local_name) : inner_->split_of(local_name);
  }

 private:
  std::shared_ptr<Layer> adapter_;
  std::set<std::string> own_;
};

}  // namespace

AdaptedFactory::AdaptedFactory(std::shared_ptr<LayerFactory> inner, Adapter& adapter)
    : ForwardingFactory(std::move(inner)), adapter_(adapter), host_(extension<AdapterHost>(*inner_)) {}

std::shared_ptr<Layer> AdaptedFactory::frozen(std::shared_ptr<Layer> layer) {
  for (auto& p : layer->parameters()) {
    if (trainable_.count(p.unsafeGetTensorImpl()) == 0) p.requires_grad_(false);
  }
  return layer;
}

// The adapter of `spec` on this rank, or null: its site's dropout keyed on the features
// this rank's part reads (adapters read whole sequences: a column product's input is
// gathered, a row product's is whole), its parameters kept trainable.
std::shared_ptr<Layer> AdaptedFactory::make_adapter(const LinearSpec& spec, const InitSpec& init, Split split,
                                                    int64_t shard, int64_t shards) {
  if (!adapter_.adapts(spec)) return nullptr;
  adapted_.push_back(spec.name);
  const int64_t first_feature = split == Split::row ? shard * (spec.in_features / shards) : 0;
  AdapterSite site{.spec = spec,
                   .init = init,
                   .dropout = [name = spec.name + ".adapter_dropout", first_feature](const at::Tensor& x, double p) {
                     return SiteDropout(name, p, SequencePart{}, first_feature)(x);
                   },
                   .split = split,
                   .shard = shard,
                   .shards = shards};
  std::shared_ptr<Layer> layer = adapter_.make(site);
  sites_.push_back(site);
  for (const auto& p : layer->parameters()) trainable_.insert(p.unsafeGetTensorImpl());
  return layer;
}

std::shared_ptr<Layer> AdaptedFactory::adapted(const std::vector<LinearSpec>& parts, const InitSpec& init) {
  bool any = false;
  for (const auto& spec : parts) any = any || adapter_.adapts(spec);
  const bool recorded_here = !any || host_ != nullptr || parts.size() == 1;  // else each part comes back through linear()
  if (recorded_here) linears_.insert(linears_.end(), parts.begin(), parts.end());
  if (!any) return frozen(parts.size() == 1 ? inner_->linear(parts[0], init) : inner_->fused_linear(parts, init));
  if (host_ != nullptr) {
    return frozen(host_->adapted_linears(parts, init, [&](std::size_t i, Split split, int64_t shard, int64_t shards) {
      return make_adapter(parts[i], init, split, shard, shards);
    }));
  }
  PLAIT_CHECK(inner_->shard_count() == 1,
              concat("the adapter adapts ", parts[0].name, ", but the tensor plugin's layers cannot host adapters"),
              "choose a tensor plugin with the capability 'adapters', or train adapters without tensor parallel");
  if (parts.size() > 1) return LayerFactory::fused_linear(parts, init);  // each part through linear()
  auto base = inner_->linear(parts[0], init);
  auto adapter = make_adapter(parts[0], init, Split::none, 0, 1);
  return frozen(std::make_shared<AdaptedLinear>(std::move(base), std::move(adapter)));
}

std::shared_ptr<Layer> AdaptedFactory::linear(const LinearSpec& spec, const InitSpec& init) { return adapted({spec}, init); }

std::shared_ptr<Layer> AdaptedFactory::fused_linear(const std::vector<LinearSpec>& parts, const InitSpec& init) {
  return adapted(parts, init);
}

std::shared_ptr<Layer> AdaptedFactory::embedding(const EmbeddingSpec& spec, const InitSpec& init) {
  return frozen(inner_->embedding(spec, init));
}
std::shared_ptr<Layer> AdaptedFactory::norm(const NormSpec& spec, const InitSpec& init) {
  return frozen(inner_->norm(spec, init));
}

void check_adapted(const AdaptedFactory& factory, const Adapter& adapter, const std::string& place) {
  adapter.check_targets(factory.linears());
  std::string names;
  for (const auto& spec : factory.linears()) {
    if (names.size() < 200) names += (names.empty() ? "" : ", ") + spec.child_name();
  }
  PLAIT_CHECK(!factory.adapted().empty(), concat(place, ": the adapter adapts none of the model's linears"),
              concat("name targets among the model's linears: ", names));
}

}  // namespace plait
