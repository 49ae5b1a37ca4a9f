#include "memory/state_budget.hpp"

#include <c10/core/ScalarType.h>

#include "model/precision.hpp"
#include "plait/sdk/error.hpp"
#include "plan/data_cost.hpp"
#include "plan/plan_inputs.hpp"
#include "run/prepare.hpp"
#include "run/tensor_shapes_check.hpp"
#include "util/human_bytes.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace {

// The frozen parameters' bytes on a rank, as the core stores them ([train] frozen_dtype).
int64_t frozen_bytes(const RankParameters& r, const ResolvedConfig& config) {
  const auto element = static_cast<int64_t>(c10::elementSize(precision_from(config.train().dtype).param_dtype));
  return (r.frozen_elements - r.frozen_bf16_elements) * element + r.frozen_bf16_elements * 2;
}

}  // namespace

void check_state_fits_memory_limit(const PreparedRun& run) {
  const ResolvedConfig& config = *run.config;
  const double limit_mb = config.train().memory_limit_mb;
  if (limit_mb <= 0.0) return;
  const auto budget = static_cast<int64_t>(limit_mb * 1024 * 1024);
  int64_t sequence_shards = 1;
  std::vector<AdapterSiteCost> adapters;
  const StageModel whole = build_shape_model(config, *run.registry, run.model, run.mesh, &sequence_shards, &adapters);
  const PlanInputs in = plan_inputs(run, whole, sequence_shards, &adapters);
  for (int64_t pp_rank = 0; pp_rank < run.mesh.pp; ++pp_rank) {
    const RankDataCost asked = plan_data_cost(in, pp_rank, run.mesh.dp);
    if (!asked.cost) return;
    const StateBytes& s = asked.cost->state;
    const int64_t frozen = frozen_bytes(asked.rank, config);
    const int64_t needed = s.params + s.grads + s.optimizer + frozen;
    if (needed <= budget) continue;
    const ParallelSettings& parallel = config.parallel();
    throw Error(
        concat(config.table("train").where("memory_limit_mb"), ": [train] memory_limit_mb = ", short_number(limit_mb),
               " is below what ", run.mesh.pp > 1 ? concat("pipeline rank ", pp_rank, "'s ranks hold") : std::string("each rank holds"),
               " before its first step: ", human_bytes(needed), " of model state under data plugin '", parallel.data,
               "' (offload '", parallel.offload, "'): parameters ", human_bytes(s.params), ", gradients ", human_bytes(s.grads),
               ", optimizer state ", human_bytes(s.optimizer), frozen > 0 ? concat(", frozen parameters ", human_bytes(frozen)) : ""),
        concat("raise train.memory_limit_mb above ", short_number(static_cast<double>(needed) / (1024 * 1024), 4),
               " (activations need more still), or shard the model state (parallel.data = \"zero\" with zero.stage = 3, "
               "or \"fsdp\"; add parallel.offload = \"cpu\")"));
  }
}

}  // namespace plait
