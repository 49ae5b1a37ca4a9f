// Fully sharded data parallel as a plugin: one flat parameter per unit (embeddings,
// each block, head; units that share a parameter share a flat parameter), mapped onto
// the shared sharding engine's stage 3 (plait::sharding).
#include <algorithm>
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"
#include "plait/sharding/group_plan.hpp"
#include "plait/sharding/sharded_engine.hpp"

namespace {

// What reshard_after_forward = false holds beside the engine's count, which is stage 3's
// resharding one: the group in use and those prefetched. Kept from forward to backward,
// every sharded group is gathered when the backward starts, while its first reductions
// are in flight: that is the step's peak.
int64_t kept_beyond_resharding(const plait::sharding::ShardingOptions& o, const plait::CostQuery& q) {
  std::vector<plait::sharding::ParamShape> params;
  for (const plait::CostParameter& p : *q.params) params.push_back({p.name, p.elements, p.decay, p.split});
  std::vector<plait::sharding::UnitShape> units;
  for (const plait::CostUnit& u : *q.units) units.push_back({u.prefix, u.params, u.borrowed});
  const int64_t working = q.bf16 ? 2 : q.param_bytes;  // the gathered buffers' element size
  const int shards = plait::sharding::shard_count_of(o, static_cast<int>(q.dp));
  const plait::sharding::GroupPlan plan = plait::sharding::plan_groups(units, params, o, shards, working);
  int64_t gathered = 0, largest = 0;
  for (const plait::sharding::PlannedGroup& g : plan.groups) {
    if (!g.sharded_params) continue;
    gathered += g.padded * working;
    largest = std::max(largest, g.padded * working);
  }
  return gathered - (1 + std::max<int64_t>(o.forward_prefetch, 0)) * largest;
}

class Fsdp final : public plait::sharding::ShardedEngine {
 public:
  plait::DataCost cost(const plait::CostQuery& query) const override {
    plait::DataCost c = ShardedEngine::cost(query);
    const plait::sharding::ShardingOptions o = sharding_options();
    if (!o.reshard_after_forward) c.transient_bytes += std::max<int64_t>(0, kept_beyond_resharding(o, query));
    return c;
  }

 protected:
  plait::sharding::ShardingOptions sharding_options() const override {
    const auto fsdp = plait_options::Options::from(options());  // [fsdp], typed from schema.toml
    plait::sharding::ShardingOptions sharding;
    sharding.plugin = "fsdp";
    sharding.stage = 3;
    sharding.reshard_after_forward = fsdp.reshard_after_forward;
    sharding.backward_prefetch = fsdp.backward_prefetch;
    sharding.forward_prefetch = fsdp.forward_prefetch;
    sharding.shard_size = fsdp.shard_size;
    sharding.broadcast_init = fsdp.broadcast_init;
    return sharding;
  }
};

}  // namespace

PLAIT_PLUGIN(Fsdp, "fsdp", "1.0.0", "grad_accum,bf16,float64,multi_rank,offload,pipeline,tensor,checkpoint,frozen", plait_schema_toml,
             "fully sharded data parallel: per-unit flat parameters, reshard after forward, prefetch, hybrid (HSDP)")
