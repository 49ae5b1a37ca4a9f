#pragma once
// Builds a model of either family through a layer factory.
#include "model/model_spec.hpp"
#include "model/unit_filter.hpp"
#include "plait/sdk/layers.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

StageModel build_model(const ModelSpec& spec, LayerFactory& factory, const InitSpec& init,
                       const UnitFilter& materialise = {});

// The model's structure without memory (meta device, dense layers): for counting and
// for cutting it into pipeline stages before any rank starts.
StageModel build_meta_model(const ModelSpec& spec);

// Parameters of a model built on the meta device (no memory): a count from the code
// itself, to hold the closed form to.
int64_t counted_params(const ModelSpec& spec);

}  // namespace plait
