#pragma once
// Reads a config: the file, the bundles it `extends` (recursively, relative to the file
// that names them, cycles refused), then `--set table.key=value` overrides.
#include <string>
#include <vector>

#include "config/config_tree.hpp"

namespace plait {

struct LoadedConfig {
  std::string path;                // the config named on the command line
  std::vector<std::string> files;  // every file read, bundles first
  ConfigTree tree;
};

LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

// Parses one "table.key=value" into `tree`. The value is read as TOML; a value that is
// not valid TOML is taken as a bare string (so --set model.size=124m works).
void apply_override(ConfigTree& tree, const std::string& assignment);

}  // namespace plait
