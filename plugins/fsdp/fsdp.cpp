// Fully sharded data parallel as a plugin: one flat parameter per unit (embeddings,
// each block, head; units that share a parameter share a flat parameter), mapped onto
// the shared sharding engine's stage 3 (plait::sharding).
#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"
#include "plait/sharding/sharded_engine.hpp"

namespace {

class Fsdp final : public plait::sharding::ShardedEngine {
 protected:
  plait::sharding::ShardingOptions sharding_options() const override {
    plait::sharding::ShardingOptions sharding;
    sharding.plugin = "fsdp";
    sharding.stage = 3;
    sharding.reshard_after_forward = options().get<bool>("reshard_after_forward");
    sharding.backward_prefetch = options().get<bool>("backward_prefetch");
    sharding.forward_prefetch = options().get<int64_t>("forward_prefetch");
    sharding.shard_size = options().get<int64_t>("shard_size");
    sharding.broadcast_init = options().get<bool>("broadcast_init");
    return sharding;
  }
};

}  // namespace

PLAIT_PLUGIN(Fsdp, "fsdp", "1.0.0", "grad_accum,bf16,float64,multi_rank,offload,pipeline,tensor,checkpoint,frozen", plait_schema_toml,
             "fully sharded data parallel: per-unit flat parameters, reshard after forward, prefetch, hybrid (HSDP)")
