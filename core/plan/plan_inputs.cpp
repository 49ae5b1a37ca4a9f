#include "plan/plan_inputs.hpp"

namespace plait {

PlanInputs plan_inputs(const PreparedRun& run, const StageModel& whole, int64_t sequence_shards,
                       const std::vector<AdapterSiteCost>* adapters) {
  return {run.config.get(), run.registry.get(), run.model, run.mesh, &run.pipeline, &whole, sequence_shards, nullptr, adapters};
}

}  // namespace plait
