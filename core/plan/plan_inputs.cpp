#include "plan/plan_inputs.hpp"

#include "config/config_loader.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// The config's own string value of `table.key`, if it sets one.
const ConfigEntry* string_entry(const ConfigTree& tree, const char* table, const char* key) {
  const ConfigEntry* e = tree.find(table, key);
  return e != nullptr && e->value.type == ConfigValue::Type::string ? e : nullptr;
}

// The assignments that let this machine check what only the target machine can run.
std::vector<std::string> local_stand_ins(const std::string& config_path, const std::vector<std::string>& sets,
                                         std::vector<std::string>* said) {
  const LoadedConfig loaded = load_config(config_path, sets);
  std::vector<std::string> out;
  auto note = [&](const ConfigEntry& e, const std::string& what) {
    if (said != nullptr) said->push_back(concat(what, " (", e.source.describe(), ")"));
  };
  if (const ConfigEntry* device = string_entry(loaded.tree, "train", "device"); device && device->value.string == "cuda") {
    out.push_back("train.device=cpu");
    note(*device, "[train] device = \"cuda\"");
  }
  // gloo, the default, runs on every machine: the plugins are searched only for another.
  if (const ConfigEntry* comm = string_entry(loaded.tree, "parallel", "comm"); comm && comm->value.string != "gloo") {
    const PluginRegistry registry = discover_plugins(config_plugin_dirs(loaded.tree));
    const PluginRecord* record = registry.find(comm->value.string);
    if (record != nullptr && record->kind == "comm" && !record->available) {
      out.push_back("parallel.comm=gloo");
      note(*comm, concat("[parallel] comm = \"", record->name, "\", which cannot run here: ", record->unavailable_reason));
    }
  }
  return out;
}

// `sets` and, after them, the stand-ins this machine needs.
std::vector<std::string> with_stand_ins(const std::string& config_path, std::vector<std::string> sets,
                                        std::vector<std::string>* said) {
  const std::vector<std::string> local = local_stand_ins(config_path, sets, said);
  sets.insert(sets.end(), local.begin(), local.end());
  return sets;
}

}  // namespace

PreparedRun prepare_for_machine(const std::string& config_path, std::vector<std::string> sets, const KnownWorld& known_world,
                                bool scan_data, std::vector<std::string>* stood_in) {
  return prepare_run(config_path, with_stand_ins(config_path, std::move(sets), stood_in), known_world, scan_data);
}

void check_schemas_for_machine(const std::string& config_path, std::vector<std::string> sets) {
  const LoadedConfig loaded = load_config(config_path, with_stand_ins(config_path, std::move(sets), nullptr));
  const PluginRegistry registry = discover_plugins(config_plugin_dirs(loaded.tree));
  registry.throw_if_refused();
  (void)resolve_config(loaded.tree, registry);
}

PlanInputs plan_inputs(const PreparedRun& run, const StageModel& whole, int64_t sequence_shards,
                       const std::vector<AdapterSiteCost>* adapters) {
  return {run.config.get(), run.registry.get(), run.model, run.mesh, &run.pipeline, &whole, sequence_shards, nullptr, adapters};
}

}  // namespace plait
