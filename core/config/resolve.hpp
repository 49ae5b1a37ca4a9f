#pragma once
// From a merged config to checked values: every core table against the core's schema,
// every chosen plugin's table against that plugin's own schema, unknown tables and keys
// refused with a location and a "did you mean".
#include <string>
#include <utility>
#include <vector>

#include "config/config_tree.hpp"
#include "config/schema.hpp"
#include "config/settings.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

// The core's tables, in the order they are printed.
const std::vector<TableSchema>& core_schemas();
// One of them by its table's name (throws for a table the core does not have).
const TableSchema& core_schema(const std::string& table);
// A plugin's schema, parsed once per process; errors name the plugin and its library.
const TableSchema& plugin_schema(const PluginRecord& record);

// The plugin roles of [parallel], in the order they are resolved.
struct PluginChoice {
  std::string role;  // "data", "pipeline", "tensor", "offload", "comm"
  std::string name;  // the plugin's name
  Source source;     // where the choice was made
  std::string place; // the same for the front of a message (a default: the config file)
  bool is_default() const { return source.kind == Source::Kind::schema_default; }
};

class ResolvedConfig {
 public:
  // The values of a table that was resolved (core tables always are).
  const Options& table(const std::string& name) const;
  // The core tables, typed (settings.hpp).
  const TrainSettings& train() const { return train_; }
  const DataSettings& data() const { return data_; }
  const ParallelSettings& parallel() const { return parallel_; }
  const CheckpointSettings& checkpoint() const { return checkpoint_; }
  const DebugSettings& debug() const { return debug_; }
  const DistributedSettings& distributed() const { return distributed_; }
  const std::vector<PluginChoice>& plugins() const { return choices_; }
  const std::vector<std::pair<std::string, ResolvedTable>>& tables() const { return tables_; }

  // What the user should know about how the config was read (an old name, say), each
  // starting at its place; shown once, by whoever reads the config first.
  const std::vector<std::string>& notes() const { return notes_; }

  // As TOML, every value given or defaulted, optionally with where each came from.
  // The [lock] table is left out: a run writes its own.
  std::string to_toml(bool provenance) const;

 private:
  friend ResolvedConfig resolve_config(const ConfigTree&, const PluginRegistry&, bool);
  std::vector<std::pair<std::string, ResolvedTable>> tables_;
  std::vector<PluginChoice> choices_;
  std::vector<std::string> notes_;
  TrainSettings train_;
  DataSettings data_;
  ParallelSettings parallel_;
  CheckpointSettings checkpoint_;
  DebugSettings debug_;
  DistributedSettings distributed_;
};

// [plugins].paths, resolved against the file that set them (needed before the registry
// exists, since the registry decides which plugin tables are valid).
std::vector<SearchDir> config_plugin_dirs(const ConfigTree& tree);

// Checks and fills the whole config. Plugins of the roles in use must exist in `registry`;
// the comm plugin is in use when `launched` (ranks were or will be started) or a mesh
// degree is not 1. A table for a plugin that is found but not chosen is checked too.
ResolvedConfig resolve_config(const ConfigTree& tree, const PluginRegistry& registry, bool launched = false);

}  // namespace plait
