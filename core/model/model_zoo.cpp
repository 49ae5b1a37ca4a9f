#include "model/model_zoo.hpp"

#include "model/dense_layers.hpp"
#include "model/gpt2.hpp"
#include "model/llama.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

StageModel build_model(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init) {
  if (spec.family == "gpt2") return build_gpt2(spec, factory, init);
  if (spec.family == "llama") return build_llama(spec, factory, init);
  throw Error(concat("[model] unknown family '", spec.family, "'"), "families: gpt2, llama");
}

int64_t counted_params(const ModelSpec& spec) {
  auto factory = make_dense_layer_factory();
  InitSpec init{0, at::TensorOptions().dtype(at::kFloat).device(at::kMeta)};
  int64_t total = 0;
  for (const auto& p : build_model(spec, *factory, init).parameters()) total += p.tensor.numel();
  return total;
}

}  // namespace plait
