#pragma once
// What the planner's per-config models read: the resolved config and its plugins, the
// model, the mesh, the pipeline plan (schedule, stages) and the model one rank builds
// (on the meta device, through the tensor plugin). A prepared run has them all; the
// search makes them for each candidate from pieces it builds once and shares.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/resolve.hpp"
#include "distributed/mesh.hpp"
#include "loader/plugin_registry.hpp"
#include "model/model_spec.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "plait/sdk/model.hpp"
#include "plan/rank_parameters.hpp"
#include "plan/rank_shape.hpp"
#include "run/prepare.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {

struct RankDataCost;  // plan/data_cost.hpp

struct PlanInputs {
  const ResolvedConfig* config = nullptr;
  const PluginRegistry* registry = nullptr;
  ModelSpec model;
  MeshShape mesh;
  const PipelinePlan* pipeline = nullptr;
  const StageModel* whole = nullptr;  // tensor-parallel rank 0's whole model
  int64_t sequence_shards = 1;        // the tensor plugin's layer factory's (above 1: sequence parallel)
  // Each pipeline rank's parameters (rank_parameters), where the caller keeps them: a
  // search shares them between candidates of one layout. Null: made when asked.
  const std::vector<RankParameters>* rank_params = nullptr;
  // Each adapter site's cost (build_shape_model's); null or empty without an adapter.
  const std::vector<AdapterSiteCost>* adapters = nullptr;
  // frozen_products(*whole, ...), where the caller keeps it: reading it walks every
  // parameter of the model, which a search of thousands of candidates should do once per
  // layout, not per candidate. Null: read when asked.
  const FrozenProducts* frozen = nullptr;
  // The data plugin's cost model's answer for one pipeline rank, with `dp_per_node` of its
  // group on a node, where the caller keeps the answers: a search's candidates that differ
  // only in what the data plugin is not asked (microbatch size, checkpointing, schedule
  // order) share one. Empty: plan_data_cost asks the plugin.
  std::function<std::shared_ptr<const RankDataCost>(const PlanInputs&, int64_t pp_rank, int64_t dp_per_node)>
      ask_data_cost;
};

// A config prepared as `plait run` prepares it (every check, the plugins' own), for a
// machine it need not be on: the planner predicts a GPU cluster from a laptop. What only
// the machine that runs it can check is left to that machine: [train] device = "cuda" is
// checked as "cpu" here (no CUDA device is asked for), and a communicator that cannot
// run here (nccl without a GPU) as gloo; an unknown one is still refused. `stood_in`, if
// given, gets each such value in words with its place. `scan_data` as prepare_run's (the
// planner's own questions need no tokens read).
PreparedRun prepare_for_machine(const std::string& config_path, std::vector<std::string> sets, const KnownWorld& known_world = {},
                                bool scan_data = false, std::vector<std::string>* stood_in = nullptr);

// The config's tables, keys and values checked against the schemas as a run would check
// them, on whatever machine (the stand-ins above): `plait config show` prints nothing a
// run would refuse as a typo or a wrong type.
void check_schemas_for_machine(const std::string& config_path, std::vector<std::string> sets);

// A prepared run's; `whole` and `sequence_shards` from build_shape_model, kept by the caller.
PlanInputs plan_inputs(const PreparedRun& run, const StageModel& whole, int64_t sequence_shards,
                       const std::vector<AdapterSiteCost>* adapters = nullptr);

}  // namespace plait
