#pragma once
// [train] freeze: parameters kept as they are. The core marks them (requires_grad false)
// on the whole model before the pipeline cuts it and the data plugin sees it, so that
// StageModel::parameters() (what every plugin trains) leaves them out on every rank alike;
// compatibility.cpp refuses a data plugin without the capability `frozen`.
#include <set>
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

// [train] frozen_dtype = "bfloat16": the frozen ones among `linear_weights` (TensorImpl,
// RecordedLinears::weights()) stored in bf16, after their initial values are set (they
// are drawn or loaded in the parameters' type and rounded once, as autocast would round
// them at every use). The parameters stay the same tensors (set_data), so the layers
// holding them read the bf16 values.
void store_frozen_linears(const StageModel& whole, const std::set<const void*>& linear_weights, const Options& train);

// Refuses frozen_dtype where it cannot take effect: without bf16 compute (a linear with
// a bf16 weight and an fp32 input has no type to run in) or with nothing frozen; naming
// the setting's place.
void check_frozen_dtype(const Options& train, const std::string& adapter);

// Checkpoints hold the frozen parameters too (no plugin owns them): each data-parallel
// replica writes its share, and a resume reads them back, so a checkpoint exports and
// reshards on its own.
std::vector<StatePart> frozen_state_parts(const StageModel& rank_model, int dp, int dp_rank);
void load_frozen_parameters(StateSource& source, const StageModel& rank_model);

// The bytes of this rank's frozen parameters (metrics.jsonl's frozen_param_bytes): the
// core holds them, not the data plugin, whose param_bytes leave them out.
int64_t frozen_bytes(const StageModel& rank_model);

}  // namespace plait
