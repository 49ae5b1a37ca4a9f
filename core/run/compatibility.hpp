#pragma once
// Checks the chosen plugins against each other and against the config before anything
// starts: a combination a plugin does not support is one sentence naming both sides
// and the missing capability.
#include "config/resolve.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

void check_compatibility(const ResolvedConfig& config, const PluginRegistry& registry);

}  // namespace plait
