#include "plait/sharding/cost_model.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include "plait/sharding/context.hpp"
#include "plait/sharding/group_plan.hpp"

namespace plait::sharding {
namespace {

// What names the replicas' all-reduce among the engine's collectives: its group is strided.
constexpr std::string_view kSumReplicas = "sum replicas ";

struct Sizes {
  int64_t working = 4;  // the flat buffers' elements (bf16 under train.dtype = bfloat16)
  int64_t master = 4;   // the master weights', moments' and offloaded gradients' elements
};

// One group's state between steps, as flatten() leaves it.
void add_group_state(StateBytes& b, const PlannedGroup& g, const ShardingOptions& o, const CostQuery& q,
                     const Sizes& s) {
  if (g.sharded_params) {
    (q.offload_params ? b.host_params : b.params) += g.shard * s.working;
  } else {
    b.params += g.padded * s.working;
  }
  if (o.stage == 1) b.grads += g.padded * s.working;  // whole, the parameters' .grad views of it
  if (q.offload_grads) {
    b.host_grads += g.shard * s.master;
    // Stage 2/3 with accumulation download each microbatch into a staging shard.
    if (o.stage != 1 && q.microbatches > 1) b.host_grads += g.shard * s.master;
  } else if (o.stage != 1) {
    b.grads += g.shard * s.working;
  }
  const bool master_is_alias = !q.offload_optimizer && s.working == s.master;
  const int64_t optimizer = 2 * g.shard * s.master + (master_is_alias ? 0 : g.shard * s.master);
  (q.offload_optimizer ? b.host_optimizer : b.optimizer) += optimizer;
}

void add_group_comm(std::vector<CommCost>& comm, const PlannedGroup& g, const ShardingOptions& o, const CostQuery& q,
                    int64_t shard_count, const Sizes& s) {
  const int64_t whole = g.padded * s.working;
  if (shard_count > 1) {
    // Stage 1 reduces the accumulated gradient once; 2 and 3 every microbatch's.
    comm.push_back({"reduce gradients " + g.name, CostCollective::reduce_scatter, whole,
                    o.stage == 1 ? 1 : q.microbatches, CostOverlap::backward, shard_count});
    if (g.sharded_params) {
      const int64_t gathers = q.microbatches * (o.reshard_after_forward ? 2 : 1);
      comm.push_back({"gather parameters " + g.name, CostCollective::all_gather, whole, gathers,
                      o.forward_prefetch > 0 ? CostOverlap::forward : CostOverlap::none, shard_count});
    } else {  // the updated shards back into the whole parameters
      comm.push_back({"gather updated " + g.name, CostCollective::all_gather, whole, 1, CostOverlap::none, shard_count});
    }
  }
  const int64_t replicas = q.dp / shard_count;
  if (replicas > 1) {
    comm.push_back({std::string(kSumReplicas) + g.name, CostCollective::all_reduce, g.shard * s.working,
                    o.stage == 1 ? 1 : q.microbatches, CostOverlap::backward, replicas});
  }
}

}  // namespace

DataCost sharded_cost(const ShardingOptions& options, const CostQuery& q) {
  PLAIT_CHECK(q.params != nullptr && q.units != nullptr, concat(options.plugin, ": a cost query without parameters"), "");
  const int64_t shard_count = shard_count_of(options, static_cast<int>(q.dp));
  std::vector<ParamShape> params;
  for (const CostParameter& p : *q.params) params.push_back({p.name, p.elements, p.decay, p.split});
  std::vector<UnitShape> units;
  for (const CostUnit& u : *q.units) units.push_back({u.prefix, u.params, u.borrowed});
  const Sizes sizes{q.bf16 ? 2 : q.param_bytes, q.param_bytes};
  const GroupPlan plan = plan_groups(units, params, options, static_cast<int>(shard_count), sizes.working);
  DataCost cost;
  int64_t largest = 0;
  for (const PlannedGroup& g : plan.groups) {
    add_group_state(cost.state, g, options, q, sizes);
    largest = std::max(largest, g.padded * sizes.working);
  }
  // In the order the backward issues the reductions: the last group's first.
  for (auto g = plan.groups.rbegin(); g != plan.groups.rend(); ++g) add_group_comm(cost.comm, *g, options, q, shard_count, sizes);
  // The global gradient norm's two float64 sums over the shard group, once a step
  // (grad_norm.hpp; over tp and pp too, which are not the data plugin's axis).
  if (shard_count > 1) cost.comm.push_back({"gradient norm", CostCollective::all_reduce, 16, 1, CostOverlap::none, shard_count});
  // At a step's peak: two reductions in flight, each a whole gradient buffer (stage 2
  // and 3 build it), and under stage 3 the gathered groups (the one in use and those
  // prefetched).
  if (options.stage >= 2) cost.transient_bytes += 2 * largest;
  if (options.stage == 3) cost.transient_bytes += (1 + std::max<int64_t>(options.forward_prefetch, 0)) * largest;
  return cost;
}

std::vector<int64_t> sharded_members_per_node(const ShardingOptions& options, const CostQuery& q,
                                              const DataCost& cost) {
  const int64_t shard_count = shard_count_of(options, static_cast<int>(q.dp));
  const int64_t on_node = std::max<int64_t>(q.dp_per_node, 1);
  std::vector<int64_t> per_node;
  for (const CommCost& c : cost.comm) {
    const int64_t size = c.group > 0 ? c.group : q.dp;
    // A node holds on_node / shard_count whole shard groups, each with one of the replicas.
    const bool strided = c.what.starts_with(kSumReplicas);
    per_node.push_back(std::clamp<int64_t>(strided ? on_node / shard_count : on_node, 1, size));
  }
  return per_node;
}

}  // namespace plait::sharding
