#pragma once
// What the configured data plugin says one rank keeps and sends (its cost model, API
// 12.3), for the rank's parameters as the run would build them (plan/rank_parameters.hpp).
// A plugin built before 12.3 has none: the answer says so, and the planner can only
// measure it.
#include <optional>
#include <string>

#include "plan/plan_inputs.hpp"
#include "plan/rank_parameters.hpp"
#include "run/prepare.hpp"

namespace plait {

struct RankDataCost {
  std::string plugin;
  RankParameters rank;
  std::optional<DataCost> cost;  // empty: the plugin has no cost model
};

// Pipeline rank `pp_rank` of the prepared run, with `dp_per_node` of its data-parallel
// group on one node (the whole group on this machine: dp).
RankDataCost plan_data_cost(const PreparedRun& run, int64_t pp_rank, int64_t dp_per_node);
// The same for the planner's inputs (the rank's model already built: a planner asking
// for every pipeline rank builds it once).
RankDataCost plan_data_cost(const PlanInputs& in, int64_t pp_rank, int64_t dp_per_node);

}  // namespace plait
