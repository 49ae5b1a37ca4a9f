#pragma once
// The training loop. It applies the interfaces in one fixed order:
//   build the model through the layer factory -> the pipeline schedule's plan keeps
//   this rank's stages -> activation checkpointing wraps blocks -> offload -> data
//   parallel wraps the stages and owns the optimizer -> loop: the executor runs this
//   rank's schedule (forwards, backwards, sends, receives; the data plugin's calls
//   around each backward); then the optimizer step.
#include <vector>

#include "train/run_plan.hpp"

namespace plait {

struct RunSummary {
  std::vector<double> losses;  // per step
  double seconds = 0.0;
};

RunSummary run_training(const RunPlan& plan);

}  // namespace plait
