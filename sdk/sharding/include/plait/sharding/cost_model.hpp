#pragma once
// What the sharding engine keeps and sends for a rank it has not built (the planner's
// query, plait/sdk/cost_model.hpp): the same group plan as setup computes, and the
// buffers flat_storage.cpp would allocate for it, counted instead of allocated.
#include "plait/sdk/cost_model.hpp"
#include "plait/sharding/options.hpp"

namespace plait::sharding {

DataCost sharded_cost(const ShardingOptions& options, const CostQuery& query);

}  // namespace plait::sharding
