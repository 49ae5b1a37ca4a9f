#include "plan/meta_rank.hpp"

#include "debug/plugin_call.hpp"
#include "distributed/instant_backend.hpp"
#include "log/logging.hpp"
#include "plan/meta_kernels.hpp"
#include "train/debug_dumps.hpp"
#include "train/rank.hpp"
#include "train/train_step.hpp"

namespace plait {

MetaRankFigures measure_rank_on_meta(const PreparedRun& run, int rank) {
  PLAIT_CHECK(rank >= 0 && rank < run.mesh.world(),
              concat("rank ", rank, " is not in the config's world of ", run.mesh.world()),
              concat("measure a rank from 0 to ", run.mesh.world() - 1));
  register_meta_kernels();
  const OnlyWarnings quiet;  // the plugins' setup lines are not the command's output
  const std::unique_ptr<CommBackend> instant = make_instant_backend();
  const std::unique_ptr<World> world = World::alone(run.mesh, rank, *instant, "meta");
  const RunPlan plan{
      .config = run.config.get(),
      .registry = run.registry.get(),
      .model = run.model,
      .pipeline = &run.pipeline,
      .world = world.get(),
      .on_meta = true,
  };
  const std::unique_ptr<Rank> built = build_rank(plan);
  DebugDumps no_dumps(plan, *built);
  StepRunner steps(plan, *built, no_dumps);
  steps.run(/*step=*/1, /*updates=*/0, [] {});
  MetaRankFigures figures;
  figures.rank = rank;
  figures.pp_rank = world->mesh().coords().pp;
  figures.state = call_plugin(built->dp.context->plugin_name, "state_bytes", [&] { return built->dp.plugin->state_bytes(); });
  figures.comm = world->stats().drain().by_op;
  return figures;
}

std::vector<MetaRankFigures> measure_pipeline_ranks_on_meta(const PreparedRun& run) {
  const Mesh mesh(run.mesh, 0);
  std::vector<MetaRankFigures> figures;
  for (int pp_rank = 0; pp_rank < run.mesh.pp; ++pp_rank) {
    figures.push_back(measure_rank_on_meta(run, mesh.rank_of({.pp = pp_rank})));
  }
  return figures;
}

std::map<std::string, OpTotals> predicted_data_traffic(const std::vector<CommOp>& data_ops) {
  std::map<std::string, OpTotals> totals;
  for (const CommOp& op : data_ops) {
    const char* kind = op.op == Collective::all_reduce       ? "dp.all_reduce"
                       : op.op == Collective::all_gather     ? "dp.all_gather"
                       : op.op == Collective::reduce_scatter ? "dp.reduce_scatter"
                                                             : "dp.send";
    totals[kind].calls += op.count;
    totals[kind].payload_bytes += static_cast<int64_t>(op.bytes) * op.count;
  }
  return totals;
}

std::map<std::string, OpTotals> measured_data_traffic(const MetaRankFigures& measured) {
  std::map<std::string, OpTotals> totals;
  for (const auto& [key, c] : measured.comm) {
    if (key.rfind("dp.", 0) == 0) totals[key] = {c.calls, c.payload_bytes};
  }
  return totals;
}

}  // namespace plait
