#pragma once
// The schema of one config table (a core table or a plugin's), parsed from TOML:
//
//   [lr]
//   type = "float"          # bool int float string path string[] int[] float[] path[]
//   default = 6e-4          # or `optional = true` (may stay unset); neither: required
//   doc = "Peak learning rate."
//   min = 0.0               # optional bounds, for int and float
//   choices = ["a", "b"]    # optional, for string
//   plan = [1, 2, 3]        # optional: the values `plait plan` tries in its search (plugin API 12.4)
//
// `path` values are resolved relative to the file that set them (--set: the working
// directory), so bundles can name files next to themselves.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_tree.hpp"
#include "plait/sdk/options.hpp"

namespace plait {

struct OptionSpec {
  std::string key;
  std::string type;
  std::optional<ConfigValue> default_value;
  bool optional = false;
  std::vector<ConfigValue> choices;
  std::optional<double> min, max;
  std::string doc;
  std::vector<ConfigValue> plan;  // the values the planner's search tries, each valid for the option
};

struct TableSchema {
  std::string table;  // the config table it describes, e.g. "train" or "zero"
  std::string owner;  // "core" or "plugin 'zero' (/path/libplait_plugin_zero.so)"
  std::vector<OptionSpec> options;

  const OptionSpec* find(const std::string& key) const;
  std::vector<std::string> keys() const;
};

// Throws plait::Error naming `owner` when the schema text itself is malformed.
TableSchema parse_schema(std::string_view toml_text, const std::string& table, const std::string& owner);

// One value for `key` alone, checked as a config's would be (the key known, its type,
// bounds and choices) and converted; errors start at `source` (the flag that gave it).
OptionValue check_value(const TableSchema& schema, const std::string& key, ConfigValue value, const Source& source);

struct ResolvedEntry {
  std::string key;
  ConfigValue value;  // after path resolution and default filling
  Source source;
};

struct ResolvedTable {
  Options options;
  std::vector<ResolvedEntry> entries;  // every key with a value, sorted by key
};

// Checks `given` (may be empty) against the schema: unknown keys, types, choices, bounds,
// required keys; fills defaults. Errors carry file:line:column and a "did you mean".
// Each value's place (Options::where) is where it was set, or `default_place` for a
// default (the config file the user runs).
ResolvedTable resolve_table(const TableSchema& schema, const ConfigTable& given, const Source& table_source,
                            const std::string& default_place = "default");

}  // namespace plait
