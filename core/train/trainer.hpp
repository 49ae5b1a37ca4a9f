#pragma once
// The training loop. It applies the interfaces in one fixed order:
//   build the model through the layer factory -> the pipeline schedule's plan keeps
//   this rank's stages -> activation checkpointing wraps blocks -> offload -> data
//   parallel wraps the stages and owns the optimizer -> loop: the executor runs this
//   rank's schedule (forwards, backwards, sends, receives; the data plugin's calls
//   around each backward); then the optimizer step.
#include <string>
#include <vector>

#include "config/resolve.hpp"
#include "distributed/world.hpp"
#include "model/model_spec.hpp"
#include "loader/plugin_registry.hpp"

namespace plait {

struct PipelinePlan;
class RunStatus;

struct RunPlan {
  const ResolvedConfig* config = nullptr;
  const PluginRegistry* registry = nullptr;
  ModelSpec model;
  const PipelinePlan* pipeline = nullptr;  // prepare_run's checked schedule and stage cut
  std::string out_dir;  // exists; rank 0 writes metrics and weights into it
  World* world = nullptr;
  int local_world_size = 1;  // ranks on this machine, to share its cores
  int local_rank = 0;
  int bound_cores = 0;  // the cores this rank is bound to ([distributed] bind_cores); 0: not bound
  RunStatus* status = nullptr;  // the run's status.json, when this rank reports its steps there
};

struct RunSummary {
  std::vector<double> losses;  // per step
  double seconds = 0.0;
};

RunSummary run_training(const RunPlan& plan);

}  // namespace plait
