#pragma once
// What the configured data plugin says one rank keeps and sends (its cost model, API
// 12.3), for the rank's parameters as the run would build them (plan/rank_parameters.hpp).
// A plugin built before 12.3 has none: the answer says so, and the planner can only
// measure it.
#include <optional>
#include <string>
#include <vector>

#include "plan/plan_inputs.hpp"
#include "plan/rank_parameters.hpp"
#include "plan/step_time.hpp"
#include "run/prepare.hpp"

namespace plait {

struct RankDataCost {
  std::string plugin;
  RankParameters rank;
  std::optional<DataCost> cost;  // empty: the plugin has no cost model
  // Members on one node of each of cost->comm's groups (DataCostPlacement, API 12.5),
  // checked; empty: the plugin does not say.
  std::vector<int64_t> members_per_node;
};

// Pipeline rank `pp_rank` of the prepared run, with `dp_per_node` of its data-parallel
// group on one node (the whole group on this machine: dp).
RankDataCost plan_data_cost(const PreparedRun& run, int64_t pp_rank, int64_t dp_per_node);
// The same for the planner's inputs (the rank's model already built: a planner asking
// for every pipeline rank builds it once).
RankDataCost plan_data_cost(const PlanInputs& in, int64_t pp_rank, int64_t dp_per_node);

// Refuses, naming the plugin, a cost model's group outside the data-parallel group of
// `dp` ranks, or a placement that does not fit its groups (plan_data_cost checks each
// answer with it).
void check_cost_groups(const RankDataCost& asked, int64_t dp);

// The answer's collectives as the step's time model takes them, each over its group as
// placed on the nodes (`data`: the whole data-parallel group's placement).
std::vector<CommOp> comm_ops(const RankDataCost& asked, const GroupPlacement& data);

}  // namespace plait
