#pragma once
// What a sharded data-parallel plugin asks of the sharding engine: which ZeRO stage,
// and how parameters are grouped, gathered and replicated. A plugin maps its own
// options onto one of these (ShardedEngine::sharding_options); everything else is the
// engine's.
#include <cstdint>
#include <string>

namespace plait::sharding {

struct ShardingOptions {
  std::string plugin;                  // tags and messages: "zero", "fsdp", your plugin's name
  int stage = 3;                       // 1: optimizer state sharded; 2: + gradients; 3: + parameters
  bool reshard_after_forward = true;   // stage 3: free a group's gathered parameters after its forward
  int64_t forward_prefetch = 1;        // stage 3: groups whose gather starts ahead of use in forward
  bool backward_prefetch = true;       // stage 3: gather the next group of backward while one runs
  int64_t persistence_threshold = 0;   // stage 3: parameters with fewer elements stay whole on every rank
  double group_cap_mb = 0.0;           // merge consecutive units into groups up to this size; 0: one per unit
  int64_t shard_size = 0;              // hybrid: shard within groups of this many dp ranks; 0: all of dp
  bool broadcast_init = true;          // rank 0's initial parameters go to every rank
};

}  // namespace plait::sharding
