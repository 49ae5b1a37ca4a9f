#include "plan/data_cost.hpp"

#include "loader/plugin_instance.hpp"
#include "model/precision.hpp"
#include "plait/sdk/offload.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {
namespace {

// The query's offload flags: what the configured offload plugin keeps in host memory.
void ask_offload(const PreparedRun& run, CostQuery& q) {
  const std::string& name = run.config->parallel().offload;
  if (name == "none") return;
  auto offload = make_plugin<Offload>(*run.registry, run.config->table(name), name, {});
  q.offload_params = offload.plugin->offloads(StateRole::param);
  q.offload_grads = offload.plugin->offloads(StateRole::grad);
  q.offload_optimizer = offload.plugin->offloads(StateRole::optimizer);
}

Collective collective_of(CostCollective op) {
  switch (op) {
    case CostCollective::all_reduce: return Collective::all_reduce;
    case CostCollective::reduce_scatter: return Collective::reduce_scatter;
    case CostCollective::all_gather:
    case CostCollective::broadcast: return Collective::all_gather;
  }
  return Collective::all_reduce;
}

}  // namespace

std::vector<CommOp> data_parallel_ops(const DataCost& cost) {
  std::vector<CommOp> out;
  for (const CommCost& c : cost.comm) {
    out.push_back({c.what, collective_of(c.op), static_cast<double>(c.bytes), c.count,
                   c.overlaps == CostOverlap::backward});
  }
  return out;
}

RankDataCost plan_data_cost(const PreparedRun& run, int64_t pp_rank, int64_t dp_per_node) {
  const ResolvedConfig& config = *run.config;
  RankDataCost out;
  out.plugin = config.parallel().data;
  const StageModel whole = build_shape_model(config, *run.registry, run.model, run.mesh);
  out.rank = rank_parameters(whole, run.pipeline.partition, run.mesh.pp, pp_rank);
  const Precision precision = precision_from(config.train().dtype);
  CostQuery q;
  q.params = &out.rank.params;
  q.units = &out.rank.units;
  q.dp = run.mesh.dp;
  q.dp_per_node = dp_per_node;
  q.param_bytes = static_cast<int64_t>(c10::elementSize(precision.param_dtype));
  q.bf16 = precision.autocast_bf16;
  q.microbatches = config.train().grad_accum * run.pipeline.schedule.spec.stages_per_rank;
  ask_offload(run, q);
  auto data = make_plugin<DataParallel>(*run.registry, config.table(out.plugin), out.plugin, {});
  if (DataCostModel* model = extension<DataCostModel>(*data.plugin)) {
    out.cost = at_place(concat("plugin '", out.plugin, "'"), [&] { return model->cost(q); });
  }
  return out;
}

}  // namespace plait
