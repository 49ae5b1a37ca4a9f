#pragma once
// The launcher's checked pipeline, which each rank then runs: every pipeline rank's
// actions, and the model's shapes (meta device) cut into the schedule's stages. Made by
// prepare_run (run/prepare.hpp), read by each rank's build (train/rank.cpp).
#include "pipeline/schedule_plan.hpp"
#include "pipeline/stage_partition.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

struct PipelinePlan {
  SchedulePlan schedule;
  StageModel shapes;
  StagePartition partition;
};

}  // namespace plait
