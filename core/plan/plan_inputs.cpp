#include "plan/plan_inputs.hpp"

namespace plait {

PlanInputs plan_inputs(const PreparedRun& run, const StageModel& whole, int64_t sequence_shards) {
  return {run.config.get(), run.registry.get(), run.model, run.mesh, &run.pipeline, &whole, sequence_shards};
}

}  // namespace plait
