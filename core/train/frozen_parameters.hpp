#pragma once
// [train] freeze: parameters kept as they are. The core marks them (requires_grad false)
// on the whole model before the pipeline cuts it and the data plugin sees it, so that
// StageModel::parameters() (what every plugin trains) leaves them out on every rank alike;
// compatibility.cpp refuses a data plugin without the capability `frozen`.
#include <string>
#include <vector>

#include "plait/sdk/model.hpp"
#include "plait/sdk/options.hpp"
#include "plait/sdk/state.hpp"

namespace plait {

// The parameters of `whole` whose reference names match a pattern of train.freeze.
// Refuses a pattern that matches none and a list that leaves nothing to train, naming the
// setting's place (prepare_run asks it of the meta model, before launch).
std::vector<std::string> frozen_names(const StageModel& whole, const Options& train);

// Marks them frozen (requires_grad false).
void freeze_parameters(const StageModel& whole, const Options& train);

// Checkpoints hold the frozen parameters too (no plugin owns them): each data-parallel
// replica writes its share, and a resume reads them back, so a checkpoint exports and
// reshards on its own.
std::vector<StatePart> frozen_state_parts(const StageModel& rank_model, int dp, int dp_rank);
void load_frozen_parameters(StateSource& source, const StageModel& rank_model);

// The bytes of this rank's frozen parameters (metrics.jsonl's frozen_param_bytes): the
// core holds them, not the data plugin, whose param_bytes leave them out.
int64_t frozen_bytes(const StageModel& rank_model);

}  // namespace plait
