#pragma once
// Reads a config: the file, the bundles it `extends` (recursively; a path relative to
// the file that names it, or a bundle's name on the bundle path; cycles refused), then
// `--set table.key=value` overrides.
#include <filesystem>
#include <string>
#include <vector>

#include "config/bundle_path.hpp"
#include "config/config_tree.hpp"

namespace plait {

struct LoadedConfig {
  std::string path;                // the config named on the command line
  std::vector<std::string> files;  // every file read, bundles first
  ConfigTree tree;
};

LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

// A config's [bundles] paths (absolute; each must be a folder), read from it alone.
std::vector<BundleDir> config_bundle_dirs(const std::filesystem::path& file);

// Parses one "table.key=value" into `tree`. The value is read as TOML; a value that is
// not valid TOML is taken as a bare string (so --set model.size=124m works). An override
// may also be "--flag=value" for a flag of `plait run` that stands for one config value
// (--steps, --resume, --max-restarts, --allow-batch-change): the value keeps that flag's
// name as its source, so an error about it names what the user typed.
void apply_override(ConfigTree& tree, const std::string& assignment);

// The key an assignment sets: assignment_key("train.lr = 3e-4") == "train.lr".
std::string assignment_key(const std::string& assignment);

// An override a command derives from one of its own flags (plan --explain's --gpus 8 is
// parallel.dp=4): its value's source is that flag, as flag_override's are.
// derived_override("--gpus 8", "parallel.dp=4") is named "--gpus 8, as parallel.dp=4".
std::string derived_override(const std::string& flag, const std::string& assignment);

// The value of an override's text as --set reads it: TOML, or else a bare string; `shown`
// names the flag in an error (a nested table, a date).
ConfigValue override_value(const std::string& text, const std::string& shown);

// The override a value flag makes: flag_override("--resume", "runs/a") == "--resume=runs/a".
std::string flag_override(const std::string& flag, const std::string& value);

}  // namespace plait
