#pragma once
// Everything `plait run` and `plait config` check before a single file is written:
// config, plugins, schemas, combination, model dimensions, the mesh, the data.
#include <memory>
#include <string>
#include <vector>

#include "config/config_loader.hpp"
#include "config/resolve.hpp"
#include "distributed/mesh.hpp"
#include "distributed/world.hpp"
#include "model/model_spec.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "plait/sdk/adapter.hpp"
#include "loader/plugin_instance.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

struct PreparedRun {
  LoadedConfig loaded;
  std::unique_ptr<PluginRegistry> registry;
  std::unique_ptr<ResolvedConfig> config;
  ModelSpec model;
  MeshShape mesh;
  int64_t world_size = 1;
  DistSettings dist;
  PluginInstance<Adapter> adapter;  // [parallel] adapter's, for the shapes below: outlives them
  PipelinePlan pipeline;
};

// The one check path of `plait run`, `plait check` and `plait config validate`: every
// check the config, the mesh and the files allow, in the order a reader would fix them
// (config, plugins, model, devices and numbers, mesh, schedule, the plugins' own checks,
// data). Nothing is written. `known_world` is the number of processes when the command
// line or the environment says it (0: not known, so the mesh degrees decide it).
// `scan_data`: read every token of the data file (a rank started by plait's launcher
// skips it: its launcher just did).
PreparedRun prepare_run(const std::string& config_path, const std::vector<std::string>& overrides,
                        const KnownWorld& known_world = {}, bool scan_data = true);

// Every rank's schedule built and played through, and `shapes` (the whole model on the
// meta device: no memory) cut into its stages, so that a schedule that would hang or a
// partition that cannot be made stops the launch instead of a rank; refusals name
// [parallel]'s lines.
PipelinePlan plan_pipeline(const ResolvedConfig& config, const PluginRegistry& registry, const MeshShape& mesh,
                           StageModel shapes);

// The config's notes (ResolvedConfig::notes), as warnings: once per command, so a
// command's entry point calls it, and a rank only when no launcher of plait's did.
void log_config_notes(const PreparedRun& run);

// The registry without a config (for `plait plugins`).
PluginRegistry discover_plugins(const std::vector<SearchDir>& extra = {});

}  // namespace plait
