#pragma once
// Every pipeline rank's actions for one optimizer step, from the chosen schedule plugin
// (or, without one, the core's own: forward then backward of each microbatch in turn),
// checked by check_schedule. The launcher builds it to refuse a bad schedule before any
// rank starts; each rank builds it again to run its own list.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/resolve.hpp"
#include "pipeline/schedule_check.hpp"
#include "plait/sdk/pipeline.hpp"
#include "loader/plugin_registry.hpp"
#include "loader/plugin_instance.hpp"

namespace plait {

struct SchedulePlan {
  std::string plugin;  // "none" for the core's sequential schedule
  ScheduleSpec spec;
  std::vector<std::vector<Action>> ranks;
  SimulatedSchedule simulated;
  // The idle share the schedule says it should have (its ScheduleModel, API 12.1), and its
  // formula; unset for a schedule that gives none.
  std::optional<double> ideal_idle_share;
  std::string idle_share_formula;
};

std::vector<Action> sequential_actions(int64_t microbatches);

// `schedule`: the configured plugin, or null for [parallel] pipeline = "none".
SchedulePlan plan_schedule(PipelineSchedule* schedule, const std::string& name, int64_t pp, int64_t microbatches);

// The chosen schedule plugin, configured (an empty instance when [parallel] pipeline = "none").
// It reports no metrics: a schedule is data, made before any rank runs.
PluginInstance<PipelineSchedule> configured_schedule(const PluginRegistry& registry, const ResolvedConfig& config);

// The plan the config asks for, with the pipeline degree `pp`.
SchedulePlan plan_configured_schedule(const PluginRegistry& registry, const ResolvedConfig& config, int64_t pp);

}  // namespace plait
