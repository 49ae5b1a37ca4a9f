#pragma once
// The model's shapes built through the chosen tensor plugin's layer factory, as tensor-
// parallel rank 0 would build them but on the meta device (no memory, no communication),
// before anything starts: every width, head count and vocabulary the factory or the model
// code cannot split over tp is refused at [parallel] tp's line, with the layer's own
// sentence, for any tensor plugin, in-house ones too.
#include <optional>
#include <string>
#include <vector>

#include "config/resolve.hpp"
#include "plait/sdk/adapter.hpp"
#include "plait/sdk/model.hpp"
#include "distributed/mesh.hpp"
#include "model/model_spec.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

void check_tensor_shapes(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                         const MeshShape& mesh);

// One adapter's site on tensor-parallel rank 0 and what the adapter says it costs there
// (AdapterCostModel, API 12.9; nothing from an adapter built without it).
struct AdapterSiteCost {
  std::string linear;  // the linear's full name
  Split split = Split::none;
  int64_t shards = 1;
  int64_t in_features = 0;  // whole
  std::optional<AdapterCost> cost;
};

// The whole model on the meta device as tensor-parallel rank 0 builds it (through the
// configured tensor plugin when tp > 1, with the adapter's layers, frozen as [train]
// freeze and the adapter freeze them): the planner's view of a rank's parameters.
// `sequence_shards`, when given, receives the factory's (above 1: sequence parallel).
// `adapter_costs`, when given, receives each adapter site's cost (below).
StageModel build_shape_model(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                             const MeshShape& mesh, int64_t* sequence_shards = nullptr,
                             std::vector<AdapterSiteCost>* adapter_costs = nullptr);

}  // namespace plait
