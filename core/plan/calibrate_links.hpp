#pragma once
// What a comm plugin's collectives cost between this machine's ranks: `ranks` members of
// one group, each a thread of this process joined through the plugin's own connect()
// (the same rendezvous a job's ranks make, over loopback), timing all-reduce, all-gather,
// reduce-scatter and sends at a small size (the latency) and a large one (the bus
// bandwidth, as nccl-tests defines it). For `plait plan --calibrate`.
#include <string>

#include "loader/plugin_registry.hpp"
#include "plan/hardware.hpp"

namespace plait {

LinkModel measure_links(const PluginRegistry& registry, const std::string& comm_plugin, int ranks);

}  // namespace plait
