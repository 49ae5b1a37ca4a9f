#pragma once
// What a comm plugin's collectives cost between this machine's ranks: `ranks` members of
// one group, each a thread of this process joined through the plugin's own connect()
// (the same rendezvous a job's ranks make, over loopback), timing all-reduce, all-gather,
// reduce-scatter and sends at a small size (the latency) and a large one (the bus
// bandwidth, as nccl-tests defines it), and how much of an all-reduce computation beside
// it hides. For `plait plan --calibrate`.
#include <string>

#include "loader/plugin_registry.hpp"
#include "plan/hardware.hpp"

namespace plait {

struct LinkFigures {
  LinkModel links;
  // The share of a large all-reduce's time that matrix products run beside it hide (1:
  // fully; 0: the two take as long as one after the other), the median of the members'.
  double overlap = 1.0;
};

LinkFigures measure_links(const PluginRegistry& registry, const std::string& comm_plugin, int ranks);

}  // namespace plait
