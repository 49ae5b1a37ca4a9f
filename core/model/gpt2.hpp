#pragma once
// nanoGPT's GPT-2: learned positions, pre-LayerNorm blocks (eps 1e-5), causal attention
// through scaled_dot_product_attention, 4x MLP with exact GELU, final LayerNorm, lm_head
// tied to wte, biases everywhere. Parameter names are nanoGPT's.
#include "model/model_spec.hpp"
#include "model/unit_filter.hpp"
#include "plait/sdk/layers.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

StageModel build_gpt2(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                       const UnitFilter& materialise = {});

}  // namespace plait
