#include "pipeline/schedule_plan.hpp"

#include "plait/sdk/error.hpp"

namespace plait {

std::vector<Action> sequential_actions(int64_t microbatches) {
  std::vector<Action> out;
  for (int64_t i = 0; i < microbatches; ++i) {
    out.push_back({ActionType::forward, 0, i});
    out.push_back({ActionType::backward, 0, i});
  }
  return out;
}

SchedulePlan plan_schedule(PipelineSchedule* schedule, const std::string& name, int64_t pp, int64_t microbatches) {
  SchedulePlan plan;
  plan.plugin = name;
  plan.spec = {pp, schedule ? schedule->stages_per_rank() : 1, microbatches};
  PLAIT_CHECK(schedule != nullptr || pp == 1,
              concat("[parallel] pp = ", pp, " needs a pipeline schedule, but [parallel] pipeline = \"none\""),
              "set [parallel] pipeline = \"1f1b\" (or \"gpipe\", \"interleaved-1f1b\")");
  PLAIT_CHECK(plan.spec.stages_per_rank >= 1,
              concat("pipeline schedule '", name, "' asks for ", plan.spec.stages_per_rank, " virtual stages per rank"),
              "a schedule holds at least one stage per rank");
  for (int64_t r = 0; r < pp; ++r) {
    plan.ranks.push_back(schedule ? schedule->actions(plan.spec, r) : sequential_actions(microbatches));
  }
  plan.simulated = check_schedule(plan.ranks, plan.spec, name);
  if (schedule == nullptr) {
    plan.ideal_idle_share = 0.0;  // one stage: nothing to wait for
    plan.idle_share_formula = "0 (no pipeline)";
  } else if (ScheduleModel* model = extension<ScheduleModel>(*schedule)) {
    plan.ideal_idle_share = model->ideal_idle_share(plan.spec);
    plan.idle_share_formula = model->idle_share_formula();
  }
  return plan;
}

PluginInstance<PipelineSchedule> configured_schedule(const PluginRegistry& registry, const ResolvedConfig& config) {
  const std::string& name = config.parallel().pipeline;
  if (name == "none") return {};
  return make_plugin<PipelineSchedule>(registry, config.table(name), name, {});
}

SchedulePlan plan_configured_schedule(const PluginRegistry& registry, const ResolvedConfig& config, int64_t pp) {
  auto schedule = configured_schedule(registry, config);
  return plan_schedule(schedule.plugin.get(), config.parallel().pipeline, pp,
                       config.train().grad_accum);
}

}  // namespace plait
