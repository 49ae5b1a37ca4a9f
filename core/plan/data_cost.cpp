#include "plan/data_cost.hpp"

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

}  // namespace

RankDataCost plan_data_cost(const PreparedRun& run, int64_t pp_rank, int64_t dp_per_node) {
  // Without tensor parallel the rank's model is the one prepare_run built for the partition.
  const StageModel whole =
      run.mesh.tp > 1 ? build_shape_model(*run.config, *run.registry, run.model, run.mesh) : run.pipeline.shapes;
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
  }
  return out;
}

}  // namespace plait
