#pragma once
// Which of the model's units each virtual pipeline stage runs. The embedding goes with
// the first stage and the head with the last (as in Megatron); the blocks are cut into
// consecutive runs, balanced by parameter count unless the config says how many each
// stage takes ([parallel] stage_blocks).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plait/sdk/model.hpp"

namespace plait {

struct StagePartition {
  // units_of[s]: indices into the model's units, in order, of virtual stage s.
  std::vector<std::vector<std::size_t>> units_of;
  int64_t stages() const { return static_cast<int64_t>(units_of.size()); }
};

// `blocks_per_stage` empty: balanced. Otherwise one count per stage, each >= 1, summing
// to the model's blocks (`where` names the config entry for the error).
StagePartition partition_stages(const StageModel& model, int64_t stages, const std::vector<int64_t>& blocks_per_stage,
                                const std::string& where = "[parallel] stage_blocks");

// The units of this pipeline rank's virtual stages (s % pp == pp_rank), in stage order,
// and where each stage's units sit in that list.
struct RankStages {
  StageModel model;
  std::map<int64_t, std::vector<std::size_t>> units_of;  // virtual stage -> indices into model.units
};
RankStages rank_stages(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank);

// The units (indices into the whole model's) a pipeline rank builds with real
// parameters: its stages' units and those owning parameters they borrow (gpt2's head
// reads the embedding's wte).
std::vector<bool> units_to_materialise(const StageModel& whole, const StagePartition& partition, int64_t pp,
                                       int64_t pp_rank);

// Blocks per stage from parameter counts alone: consecutive runs that make the largest
// run as small as possible (ties: earlier stages take fewer, as the first stage also
// holds the embedding). Exposed for tests and `plait schedule show`.
std::vector<int64_t> balance_blocks(const std::vector<int64_t>& block_params, int64_t stages);

}  // namespace plait
