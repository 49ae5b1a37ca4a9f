#pragma once
// Llama as Hugging Face's LlamaForCausalLM: RMSNorm, rotary position embedding
// (rotate-half form), SwiGLU MLP, grouped-query attention, untied lm_head, no biases.
// Parameter names are Hugging Face's.
#include "model/model_spec.hpp"
#include "model/unit_filter.hpp"
#include "plait/sdk/layers.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

StageModel build_llama(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                       const UnitFilter& materialise = {});

}  // namespace plait
