#pragma once
// [debug] output, kept out of the training step: step 1's inputs, targets and logits
// (dump_logits) and the whole gradients after step 1's backward (dump_grads). Traces of
// steps ([debug] trace_steps) are the step tracer's.
#include <cstdint>
#include <string>
#include <vector>

#include "data/sampler.hpp"
#include "pipeline/pipeline_executor.hpp"
#include "train/rank.hpp"

namespace plait {

class DebugDumps {
 public:
  DebugDumps(const RunPlan& plan, Rank& rank);
  // What the executor must keep for this step's dumps.
  StepRequests requests(int64_t step) const;
  // After the step's backwards, before its optimizer step (collective where a dump is due).
  void after_schedule(int64_t step, const std::vector<Batch>& batches, const ScheduleOutcome& outcome);

 private:
  const RunPlan& plan_;
  Rank& rank_;
  std::string out_;
  bool logits_holder_ = false;  // the last stage's first dp rank (its tp ranks gather the logits)
  bool logits_writer_ = false;  // ... and its first tp rank
  bool dump_logits_ = false, dump_grads_ = false;
};

}  // namespace plait
