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
  // 0 without measuring where every core has a rank computing on it: the collective's
  // copies and sums then take their time from a rank's computation (a 124M ddp step
  // here: its buckets' all-reduce during the backward cost 448 ms against 364 ms after it).
  double overlap = 1.0;
  std::string overlap_source;  // how `overlap` was found, for the file's sources
  // How long a blocking collective waits for its slowest member, µs per √ms of products
  // since the group last synchronised (the members' mean).
  double skew_us_per_sqrt_ms = 0;
};

LinkFigures measure_links(const PluginRegistry& registry, const std::string& comm_plugin, int ranks);

}  // namespace plait
