#pragma once
// Bundles are configs a team shares and `extends` names. A name with no folder and no
// .toml ("zero3-offload") is looked for on the bundle path: the built-in bundles
// (configs/bundles/, beside the plait binary as share/plait/bundles), then
// PLAIT_BUNDLE_PATH's folders (':'-separated), then the main config's [bundles] paths;
// the first folder holding <name>.toml wins.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace plait {

struct BundleDir {
  std::filesystem::path path;
  std::string origin;  // "built-in", "PLAIT_BUNDLE_PATH", "configs/x.toml:3:9"
};

// The folders, in search order; `from_config` the main config's [bundles] paths.
std::vector<BundleDir> bundle_dirs(const std::vector<BundleDir>& from_config = {});

// Whether an `extends` entry can be a bundle's name (no folder, no .toml) rather than a
// file's path; the loader still takes it as a path when it names something beside the file.
bool is_bundle_name(const std::string& entry);

std::optional<std::filesystem::path> find_bundle(const std::string& name, const std::vector<BundleDir>& dirs);

struct BundleInfo {
  std::string name;
  std::filesystem::path path;
  std::string origin;
  std::string description;        // the file's first comment line
  std::vector<std::string> keys;  // "table.key" it sets
  std::vector<std::string> extends;
};
// Every bundle on the path, in search order; a name found twice is listed where it wins.
std::vector<BundleInfo> list_bundles(const std::vector<BundleDir>& dirs);

}  // namespace plait
