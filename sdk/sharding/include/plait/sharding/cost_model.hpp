#pragma once
// What the sharding engine keeps and sends for a rank it has not built (the planner's
// query, plait/sdk/cost_model.hpp): the same group plan as setup computes, and the
// buffers flat_storage.cpp would allocate for it, counted instead of allocated.
#include <cstdint>
#include <vector>

#include "plait/sdk/cost_model.hpp"
#include "plait/sharding/options.hpp"

namespace plait::sharding {

DataCost sharded_cost(const ShardingOptions& options, const CostQuery& query);

// Members on one node of each of `cost.comm`'s groups (API 12.5's DataCostPlacement): a
// shard group is consecutive data-parallel ranks (context.cpp), within a node when it
// fits; the replicas of a hybrid's shard are one from each shard group.
std::vector<int64_t> sharded_members_per_node(const ShardingOptions& options, const CostQuery& query,
                                              const DataCost& cost);

}  // namespace plait::sharding
