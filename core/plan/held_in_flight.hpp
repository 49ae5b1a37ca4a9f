#pragma once
// What a pipeline rank holds at its peak: the activation model's bytes per virtual stage
// (plan/activation_memory.hpp), held from each forward to its backward as the rank's
// schedule orders them.
#include <cstdint>
#include <vector>

#include "pipeline/pipeline_plan.hpp"
#include "plait/sdk/pipeline.hpp"
#include "plan/activation_memory.hpp"

namespace plait {

// The rank's actions played in order, each forward holding its virtual stage's bytes
// (`stage_bytes[stage]`) until that microbatch's backward of the stage, as the pipeline
// executor counts them.
int64_t peak_held_bytes(const std::vector<Action>& rank_actions, const std::vector<int64_t>& stage_bytes);

// Each virtual stage's bytes: its units' (the embedding with the first stage, the head
// with the last).
std::vector<int64_t> stage_activation_bytes(const PipelinePlan& pipeline, const ActivationBytes& per);

}  // namespace plait
