#include "plan/data_cost.hpp"

#include <algorithm>

#include "loader/plugin_instance.hpp"
#include "model/precision.hpp"
#include "plait/sdk/offload.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {
namespace {

// The query's offload flags: what the configured offload plugin keeps in host memory.
void ask_offload(const PlanInputs& in, CostQuery& q) {
  const std::string& name = in.config->parallel().offload;
  if (name == "none") return;
  auto offload = make_plugin<Offload>(*in.registry, in.config->table(name), name, {});
  q.offload_params = offload.plugin->offloads(StateRole::param);
  q.offload_grads = offload.plugin->offloads(StateRole::grad);
  q.offload_optimizer = offload.plugin->offloads(StateRole::optimizer);
}

Collective collective_of(CostCollective op) {
  switch (op) {
    case CostCollective::all_reduce: return Collective::all_reduce;
    case CostCollective::reduce_scatter: return Collective::reduce_scatter;
    // A broadcast moves what an all-gather's output holds, over a tree or a ring alike.
    case CostCollective::all_gather:
    case CostCollective::broadcast: return Collective::all_gather;
  }
  return Collective::all_reduce;
}

// Ranks in a collective's group: 0 stands for the whole data-parallel group.
int64_t group_size(const CommCost& c, int64_t dp) { return c.group > 0 ? c.group : dp; }

// A subgroup's placement: as the plugin says (API 12.5), or else spread evenly over the
// data group's nodes (DataCostPlacement's fallback).
GroupPlacement subgroup(const RankDataCost& asked, std::size_t i, const GroupPlacement& data) {
  const int64_t size = group_size(asked.cost->comm[i], data.size);
  if (!asked.members_per_node.empty()) return {size, asked.members_per_node[i]};
  return {size, std::clamp<int64_t>(size * data.per_node / data.size, 1, size)};
}

}  // namespace

RankDataCost plan_data_cost(const PreparedRun& run, int64_t pp_rank, int64_t dp_per_node) {
  const StageModel whole = build_shape_model(*run.config, *run.registry, run.model, run.mesh);
  return plan_data_cost(plan_inputs(run, whole, 1), pp_rank, dp_per_node);
}

RankDataCost plan_data_cost(const PlanInputs& in, int64_t pp_rank, int64_t dp_per_node) {
  const ResolvedConfig& config = *in.config;
  RankDataCost out;
  out.plugin = config.parallel().data;
  out.rank = in.rank_params != nullptr ? in.rank_params->at(static_cast<std::size_t>(pp_rank))
                                       : rank_parameters(*in.whole, in.pipeline->partition, in.mesh.pp, pp_rank);
  const Precision precision = precision_from(config.train().dtype);
  CostQuery q;
  q.params = &out.rank.params;
  q.units = &out.rank.units;
  q.dp = in.mesh.dp;
  q.dp_per_node = dp_per_node;
  q.param_bytes = static_cast<int64_t>(c10::elementSize(precision.param_dtype));
  q.bf16 = precision.autocast_bf16;
  q.microbatches = config.train().grad_accum * in.pipeline->schedule.spec.stages_per_rank;
  ask_offload(in, q);
  auto data = make_plugin<DataParallel>(*in.registry, config.table(out.plugin), out.plugin, {});
  if (DataCostModel* model = extension<DataCostModel>(*data.plugin)) {
    out.cost = at_place(concat("plugin '", out.plugin, "'"), [&] { return model->cost(q); });
    if (DataCostPlacement* placement = extension<DataCostPlacement>(*data.plugin)) {
      out.members_per_node = at_place(concat("plugin '", out.plugin, "'"),
                                      [&] { return placement->members_per_node(q, *out.cost); });
    }
    check_cost_groups(out, q.dp);
  }
  return out;
}

void check_cost_groups(const RankDataCost& c, int64_t dp) {
  const std::vector<CommCost>& comm = c.cost->comm;
  const std::vector<int64_t>& per_node = c.members_per_node;
  const std::string who = concat("data plugin '", c.plugin, "'");
  const std::string fix = "the plugin's cost model must describe its own groups: ask its authors";
  PLAIT_CHECK(per_node.empty() || per_node.size() == comm.size(),
              concat(who, ": its placement (DataCostPlacement) gives ", per_node.size(), " counts for ", comm.size(),
                     " collectives"),
              fix);
  for (std::size_t i = 0; i < comm.size(); ++i) {
    const int64_t size = group_size(comm[i], dp);
    PLAIT_CHECK(comm[i].group >= 0 && size <= dp && dp % size == 0,
                concat(who, ": its collective '", comm[i].what, "' has a group of ", comm[i].group,
                       " ranks in a data-parallel group of ", dp),
                fix + " (a group divides the data-parallel group; 0 means all of it)");
    PLAIT_CHECK(per_node.empty() || (per_node[i] >= 1 && per_node[i] <= size),
                concat(who, ": its collective '", comm[i].what, "' has ", per_node.empty() ? 0 : per_node[i],
                       " of its ", size, " members on one node"),
                fix + " (from 1 to the group's size)");
  }
}

std::vector<CommOp> comm_ops(const RankDataCost& asked, const GroupPlacement& data) {
  std::vector<CommOp> ops;
  for (std::size_t i = 0; i < asked.cost->comm.size(); ++i) {
    const CommCost& c = asked.cost->comm[i];
    ops.push_back({c.what, collective_of(c.op), static_cast<double>(c.bytes), c.count,
                   c.overlaps == CostOverlap::backward, c.overlaps == CostOverlap::forward, subgroup(asked, i, data)});
  }
  return ops;
}

}  // namespace plait
