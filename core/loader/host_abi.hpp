#pragma once
// What this build of plait was compiled against, for the plugin loader's checks.
#include "loader/plugin_registry.hpp"

namespace plait {

HostAbi host_abi();

}  // namespace plait
