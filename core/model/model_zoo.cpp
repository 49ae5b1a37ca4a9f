#include "model/model_zoo.hpp"

#include "model/dense_layers.hpp"
#include "model/gpt2.hpp"
#include "model/llama.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

StageModel build_model(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                       const UnitFilter& materialise) {
  if (spec.family == "gpt2") return build_gpt2(spec, factory, init, materialise);
  if (spec.family == "llama") return build_llama(spec, factory, init, materialise);
  throw Error(concat("[model] unknown family '", spec.family, "'"), "families: gpt2, llama");
}

StageModel build_meta_model(const ModelSpec& spec) {
  auto factory = make_dense_layer_factory();
  return build_model(spec, *factory, InitSpec{0, at::TensorOptions().dtype(at::kFloat).device(at::kMeta)});
}

int64_t counted_params(const ModelSpec& spec) {
  int64_t total = 0;
  for (const auto& p : build_meta_model(spec).parameters()) total += p.tensor.numel();
  return total;
}

}  // namespace plait
