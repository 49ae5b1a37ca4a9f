#pragma once
// What one rank's training is given: the checked config and plugins, the model, the
// pipeline plan, its world and folder. Every part of core/train reads it, so it lives
// below them all (trainer.hpp, which runs the loop, is above them).
#include <string>

#include "config/resolve.hpp"
#include "distributed/world.hpp"
#include "loader/plugin_registry.hpp"
#include "model/model_spec.hpp"

namespace plait {

struct PipelinePlan;  // pipeline/pipeline_plan.hpp
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
  // The checkpoint plait run checked and resumes from, which may be older than the newest
  // (a damaged one passed over); empty: [checkpoint]'s own answer (resume_source).
  std::string resume_from;
  // The planner's measured rank (plan/meta_rank.hpp): every tensor a shape on the meta
  // device, no weights loaded, nothing dumped.
  bool on_meta = false;
};

}  // namespace plait
