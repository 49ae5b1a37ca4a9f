// ZeRO stages 1-3 as a plugin: the options map onto the shared sharding engine
// (plait::sharding), which does the work.
#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"
#include "plait/sharding/sharded_engine.hpp"

namespace {

class Zero final : public plait::sharding::ShardedEngine {
 protected:
  plait::sharding::ShardingOptions sharding_options() const override {
    const auto zero = plait_options::Options::from(options());  // [zero], typed from schema.toml
    plait::sharding::ShardingOptions sharding;
    sharding.plugin = "zero";
    sharding.stage = static_cast<int>(zero.stage);
    sharding.group_cap_mb = zero.bucket_mb;
    sharding.forward_prefetch = zero.prefetch_depth;
    sharding.backward_prefetch = sharding.forward_prefetch > 0;
    sharding.persistence_threshold = zero.persistence_threshold;
    sharding.broadcast_init = zero.broadcast_init;
    return sharding;
  }
};

}  // namespace

PLAIT_PLUGIN(Zero, "zero", "1.0.0", "grad_accum,bf16,float64,multi_rank,offload,pipeline,tensor,checkpoint,frozen", plait_schema_toml,
             "ZeRO data parallel: optimizer state (1), gradients (2) and parameters (3) sharded across ranks")
