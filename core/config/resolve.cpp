#include "config/resolve.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "config/options_edit.hpp"
#include "plait/sdk/error.hpp"
#include "schema_checkpoint.hpp"
#include "schema_data.hpp"
#include "schema_debug.hpp"
#include "schema_distributed.hpp"
#include "schema_lock.hpp"
#include "schema_model.hpp"
#include "schema_parallel.hpp"
#include "schema_bundles.hpp"
#include "schema_plugins.hpp"
#include "schema_train.hpp"
#include "util/abbreviate.hpp"
#include "util/did_you_mean.hpp"

namespace plait {

// A plugin's schema is parsed once per process: `plait plan` resolves thousands of
// candidates against the same plugins.
const TableSchema& plugin_schema(const PluginRecord& record) {
  static std::mutex mutex;
  static std::map<std::string, TableSchema> parsed;  // by owner and text
  const std::string owner = concat("plugin '", record.name, "' (", record.path, ")");
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(owner + "\n" + record.schema_toml);
  if (it == parsed.end()) {
    it = parsed.emplace(owner + "\n" + record.schema_toml, parse_schema(record.schema_toml, record.name, owner)).first;
  }
  return it->second;
}

const std::vector<TableSchema>& core_schemas() {
  static const std::vector<TableSchema> schemas = [] {
    std::vector<std::pair<const char*, const char*>> texts = {
        {"model", schema_model_toml},         {"data", schema_data_toml},
        {"train", schema_train_toml},         {"parallel", schema_parallel_toml},
        {"distributed", schema_distributed_toml},
        {"checkpoint", schema_checkpoint_toml}, {"plugins", schema_plugins_toml},
        {"bundles", schema_bundles_toml},
        {"debug", schema_debug_toml},         {"lock", schema_lock_toml}};
    std::vector<TableSchema> out;
    for (const auto& [table, text] : texts) out.push_back(parse_schema(text, table, "core"));
    return out;
  }();
  return schemas;
}

const TableSchema& core_schema(const std::string& table) {
  for (const TableSchema& s : core_schemas()) {
    if (s.table == table) return s;
  }
  throw Error(concat("the core has no [", table, "] table"), "");
}

const Options& ResolvedConfig::table(const std::string& name) const {
  for (const auto& [table, resolved] : tables_) {
    if (table == name) return resolved.options;
  }
  throw Error(concat("internal: config table [", name, "] was not resolved"), "report this as a plait bug");
}

std::string ResolvedConfig::to_toml(bool provenance) const {
  std::string out;
  for (const auto& [table, resolved] : tables_) {
    if (table == "lock") continue;
    out += (out.empty() ? "[" : "\n[") + table + "]\n";
    for (const auto& e : resolved.entries) {
      std::string line = e.key + " = " + e.value.to_toml();
      if (provenance) {
        line.resize(std::max<std::size_t>(line.size() + 1, 40), ' ');
        line += "# " + e.source.describe();
      }
      out += line + "\n";
    }
  }
  return out;
}

std::vector<SearchDir> config_plugin_dirs(const ConfigTree& tree) {
  std::vector<SearchDir> dirs;
  for (const auto& schema : core_schemas()) {
    if (schema.table != "plugins") continue;
    ResolvedTable t = resolve_table(schema, tree.table("plugins"), tree.table_source("plugins"));
    const ConfigEntry* entry = tree.find("plugins", "paths");
    const std::string origin = entry ? entry->source.describe() + ": [plugins].paths" : "[plugins].paths";
    for (const auto& p : t.options.get<std::vector<std::string>>("paths")) dirs.push_back({p, origin});
  }
  return dirs;
}

// "none" means no plugin in every role. Before API 12 it was also the single-process data
// strategy's name, now "single"; a config that says data = "none" still chooses it, and
// a note says so once.
constexpr const char* kSingleProcess = "single";

static void resolve_data_alias(ResolvedTable& parallel, std::vector<std::string>& notes) {
  const Options& o = parallel.options;
  if (o.get<std::string>("data") != "none") return;
  notes.push_back(concat(o.where("data"), ": [parallel] data = \"none\" chooses '", kSingleProcess,
                         "', the single-process strategy (its name before plugin API 12); write data = \"",
                         kSingleProcess, "\""));
  parallel.options = with_values(o, {{"data", std::string(kSingleProcess), o.where("data")}});
  for (auto& entry : parallel.entries) {
    if (entry.key == "data") entry.value = ConfigValue::of(std::string(kSingleProcess));
  }
}

// Every key belongs to a table: a root-level one is refused, pointing at the table it may belong to.
static void refuse_root_keys(const ConfigTree& tree, const std::vector<std::string>& all_keys) {
  for (const auto& [key, entry] : tree.table("")) {
    std::vector<std::string> bare;
    for (const auto& k : all_keys) bare.push_back(k.substr(k.find('.') + 1));
    const std::string near = closest_match(key, bare);
    std::string hint = "root-level keys: extends; everything else belongs to a table";
    for (const auto& k : all_keys) {
      if (!near.empty() && k.substr(k.find('.') + 1) == near) {
        hint = "did you mean " + k + "? (write it under [" + k.substr(0, k.find('.')) + "])";
        break;
      }
    }
    throw Error(concat(entry.source.describe(), ": unknown root-level key '", abbreviate(key), "'"), hint);
  }
}

// The table of a found plugin that plays no role does nothing. An adapter's the user set
// (in the config or a flag) is refused: with no adapter chosen every weight trains, the
// opposite of what [lora] asks for, and nobody would notice until the run was over. Any
// other such table, or one a bundle set (it serves configs that choose the plugin), is noted.
static void check_idle_table(const ConfigTree& tree, const PluginRecord& record, const ParallelSettings& parallel,
                             std::vector<std::string>& notes) {
  const ConfigTable& table = tree.table(record.name);
  if (table.empty()) return;
  auto first = table.begin();
  for (auto it = table.begin(); it != table.end(); ++it) {
    if (tree.set_by_user(it->second.source)) {
      first = it;
      break;
    }
  }
  const std::string place = concat(first->second.source.describe(), ": [", record.name, "] ", first->first, " is set, but ");
  const bool adapter = record.kind == "adapter";
  if (adapter && tree.set_by_user(first->second.source)) {
    throw Error(concat(place, "the run trains ",
                       parallel.adapter == "none" ? std::string("no adapter ([parallel] adapter = \"none\")")
                                                  : concat("the adapter '", parallel.adapter, "'"),
                       ": every option of [", record.name, "] would be ignored",
                       parallel.adapter == "none" ? " and every weight of the model trained" : ""),
                concat("choose it with [parallel] adapter = \"", record.name, "\", or remove [", record.name, "]"));
  }
  notes.push_back(concat(place, record.kind, " plugin '", record.name,
                         "' plays no role in [parallel]: its options do nothing in this run"));
}

// Which plugins play which role, each found and of its role's kind.
static std::vector<PluginChoice> choose_plugins(const ConfigTree& tree, const PluginRegistry& registry,
                                                const Options& parallel, bool one_process) {
  std::vector<PluginChoice> choices;
  for (const std::string role : {"data", "pipeline", "tensor", "offload", "adapter", "comm"}) {
    const std::string name = parallel.get<std::string>(role);
    if (name == "none") continue;
    const ConfigEntry* entry = tree.find("parallel", role);
    Source source = entry ? entry->source : Source::from_default();
    const std::string where = concat(source.describe(), ": [parallel].", role);
    if (role == "comm" && one_process) {  // nothing to communicate, but a name no plugin has is still a mistake
      const PluginRecord* record = registry.find(name);
      if (record == nullptr || record->kind != role) registry.require(name, role, where);
      continue;
    }
    registry.require(name, role, where);
    choices.push_back({role, name, source, entry ? source.describe() : tree.default_place()});
  }
  return choices;
}

[[noreturn]] static void refuse_unknown_table(const ConfigTree& tree, const std::string& table,
                                              const std::vector<std::string>& core_names, const PluginRegistry& registry) {
  std::vector<std::string> known = core_names;
  for (const auto& p : registry.plugins()) known.push_back(p.name);
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw Error(concat(tree.table_source(table).describe(), ": unknown table [", table, "]", did_you_mean(table, known)),
              concat("tables are the core's and those named after a found plugin: ", list));
}

ResolvedConfig resolve_config(const ConfigTree& tree, const PluginRegistry& registry, bool launched) {
  ResolvedConfig out;
  std::vector<std::string> core_names;
  std::vector<std::string> all_keys;  // "table.key", for root-level typos
  for (const auto& schema : core_schemas()) {
    core_names.push_back(schema.table);
    for (const auto& k : schema.keys()) all_keys.push_back(schema.table + "." + k);
  }

  refuse_root_keys(tree, all_keys);
  for (const auto& schema : core_schemas()) {
    out.tables_.emplace_back(schema.table, resolve_table(schema, tree.table(schema.table), tree.table_source(schema.table),
                                                         tree.default_place()));
  }
  for (auto& [name, table] : out.tables_) {
    if (name == "parallel") resolve_data_alias(table, out.notes_);
  }
  out.train_ = TrainSettings::from(out.table("train"));
  out.data_ = DataSettings::from(out.table("data"));
  out.parallel_ = ParallelSettings::from(out.table("parallel"));
  out.checkpoint_ = CheckpointSettings::from(out.table("checkpoint"));
  out.debug_ = DebugSettings::from(out.table("debug"));
  out.distributed_ = DistributedSettings::from(out.table("distributed"));

  const bool one_process = !launched && out.parallel_.dp == 1 && out.parallel_.pp == 1 && out.parallel_.tp == 1;
  out.choices_ = choose_plugins(tree, registry, out.table("parallel"), one_process);

  // Plugin tables: chosen plugins always (defaults filled), found-but-unchosen ones when present.
  std::vector<std::string> resolved_plugins;
  auto resolve_plugin_table = [&](const PluginRecord& record) {
    const TableSchema& schema = plugin_schema(record);
    out.tables_.emplace_back(record.name, resolve_table(schema, tree.table(record.name), tree.table_source(record.name),
                                                        tree.default_place()));
    resolved_plugins.push_back(record.name);
  };
  for (const auto& choice : out.choices_) {
    if (std::find(resolved_plugins.begin(), resolved_plugins.end(), choice.name) == resolved_plugins.end()) {
      resolve_plugin_table(*registry.find(choice.name));
    }
  }
  for (const auto& table : tree.tables()) {
    if (table.empty()) continue;
    if (std::find(core_names.begin(), core_names.end(), table) != core_names.end()) continue;
    if (std::find(resolved_plugins.begin(), resolved_plugins.end(), table) != resolved_plugins.end()) continue;
    if (const PluginRecord* record = registry.find(table)) {
      resolve_plugin_table(*record);
      check_idle_table(tree, *record, out.parallel_, out.notes_);
      continue;
    }
    refuse_unknown_table(tree, table, core_names, registry);
  }
  return out;
}

}  // namespace plait
