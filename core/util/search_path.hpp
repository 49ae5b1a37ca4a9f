#pragma once
// Where plait looks for what it loads at run time: beside its own binary (the folder above
// bin/ holds lib/plait/plugins and share/plait/bundles), then folders an environment
// variable lists (PLAIT_PLUGIN_PATH, PLAIT_BUNDLE_PATH).
#include <filesystem>
#include <string>
#include <vector>

namespace plait {

// The folder above the running binary's bin/.
std::filesystem::path install_prefix();

// The non-empty entries of a ':'-separated environment variable; none when it is unset.
std::vector<std::string> env_path_list(const char* variable);

}  // namespace plait
