#pragma once
// Every chosen plugin's own check of the run (Plugin::check, plait/sdk/run_check.hpp),
// made before anything starts, on an instance made for it alone.
#include "config/resolve.hpp"
#include "distributed/mesh.hpp"
#include "model/model_spec.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

void check_plugins(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                   const MeshShape& mesh);

}  // namespace plait
