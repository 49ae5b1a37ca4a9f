// ZeRO stages 1-3 as a plugin: the options map onto the shared sharding engine
// (plugins/common/sharding), which does the work.
#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"
#include "sharding/sharded_engine.hpp"

namespace {

class Zero final : public plait::sharding::ShardedEngine {
 protected:
  plait::sharding::ShardingPlan make_plan(const plait::Options& options) const override {
    plait::sharding::ShardingPlan plan;
    plan.plugin = "zero";
    plan.stage = static_cast<int>(options.get<int64_t>("stage"));
    plan.group_cap_mb = options.get<double>("bucket_mb");
    plan.forward_prefetch = options.get<int64_t>("prefetch_depth");
    plan.backward_prefetch = plan.forward_prefetch > 0;
    plan.persistence_threshold = options.get<int64_t>("persistence_threshold");
    plan.broadcast_init = options.get<bool>("broadcast_init");
    return plan;
  }
};

}  // namespace

PLAIT_PLUGIN(Zero, "zero", "1.0.0", "grad_accum,bf16,float64,multi_rank,offload,pipeline,tensor,checkpoint", plait_schema_toml,
             "ZeRO data parallel: optimizer state (1), gradients (2) and parameters (3) sharded across ranks")
