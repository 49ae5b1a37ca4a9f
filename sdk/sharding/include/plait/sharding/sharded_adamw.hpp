#pragma once
// The sharded AdamW step: each rank updates the master shard it owns with the SDK's
// AdamW (each parameter's run of the shard decayed or not), the result reaches the
// working parameters (through host-to-device copies when offloaded), and, where
// parameters are kept whole, the updated shards are all-gathered while the next group
// updates. The norm for clipping is the global one over shards, tp and pp.
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/grad_norm.hpp"
#include "plait/sharding/context.hpp"

namespace plait::sharding {

// The squared norm of every reduced gradient shard, summed over all ranks that hold one.
GradNorm sharded_grad_norm(const ShardingContext& ctx);

// One optimizer step on every group, then zeroed gradients.
void sharded_update(ShardingContext& ctx, const UpdateArgs& args);

// Zeroed gradients without a step (a skipped step).
void clear_gradients(ShardingContext& ctx);

}  // namespace plait::sharding
