#pragma once
// One rank's parameters and units as its data plugin will see them, from the model built
// on the meta device (through the tensor plugin, cut to the pipeline rank's stages): what
// a data plugin's cost model is asked about (plait/sdk/cost_model.hpp), at any mesh,
// with no memory and no process per rank.
#include <cstdint>
#include <vector>

#include "pipeline/stage_partition.hpp"
#include "plait/sdk/cost_model.hpp"

namespace plait {

struct RankParameters {
  std::vector<CostParameter> params;
  std::vector<CostUnit> units;
  // Frozen parameters ([train] freeze, an adapter's base): the core holds them whole on
  // every data-parallel rank, outside the data plugin's state.
  int64_t frozen_elements = 0;
  int64_t frozen_bf16_elements = 0;  // of them stored in bf16 ([train] frozen_dtype)
  int64_t elements() const;
};

// Pipeline rank `pp_rank`'s stages of `whole` (built on the meta device); borrowed names
// that the rank does not own are dropped, as the runtime's tied parameters drop them.
RankParameters rank_parameters(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank);

}  // namespace plait
