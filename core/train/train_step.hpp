#pragma once
// One optimizer step, in the manner of llm.c's training loop: the step's batches, the
// global count of targets that count, this rank's schedule (forwards and backwards), the global loss,
// then the optimizer step, which the core withholds when the loss or the gradient norm
// is not finite (data_parallel.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/sampler.hpp"
#include "pipeline/pipeline_executor.hpp"
#include "timing/phase_clock.hpp"
#include "train/debug_dumps.hpp"
#include "train/lr_schedule.hpp"
#include "train/rank.hpp"

namespace plait {

struct StepOutcome {
  double loss = 0.0;              // global, per counted target of the global batch
  bool loss_finite_here = true;   // this rank's own share of the loss was finite
  int64_t tokens = 0;             // target tokens of the global batch
  int64_t counted_tokens = 0;     // those that count in the loss (not -1)
  double lr = 0.0;
  StepResult result;              // norm, and whether the update was applied
  ScheduleOutcome schedule;       // this rank's activation bytes and timing
  // The step's interval, from the end of the step before (its report and checkpoint
  // included) to the end of this one's update, by phase (timing/phase_clock.hpp).
  PhaseTimes time;
};

class StepRunner {
 public:
  StepRunner(const RunPlan& plan, Rank& rank, DebugDumps& dumps);
  // `updates`: optimizer updates applied before this step (AdamW counts those).
  // `before_update` runs between the backward and the optimizer's update.
  StepOutcome run(int64_t step, int64_t updates, const std::function<void()>& before_update);
  // The data position, for checkpoints: the sampler's state, and it restored.
  std::string data_state() const { return sampler_->state(); }
  void restore_data(const std::string& state) { sampler_->restore(state); }
  int64_t samples_per_step() const { return sampler_->samples_per_batch() * accum_; }

 private:
  std::pair<std::vector<Batch>, at::Tensor> draw(StepOutcome& out);
  std::vector<Batch> next_batches();
  static void straggle(double ms);
  void update(StepOutcome& out, int64_t updates, const at::Tensor& figures, const DeviceGauges::Taken& gauges);
  at::Tensor counted_tokens(const std::vector<Batch>& batches, int64_t counted) const;
  static at::Tensor summed(const at::Tensor& local, Communicator* group, const std::string& what);
  at::Tensor global_loss(const at::Tensor& loss_here) const;

  const RunPlan& plan_;
  Rank& rank_;
  DebugDumps& dumps_;
  std::unique_ptr<BatchSampler> sampler_;
  LrSchedule lr_;
  int64_t accum_ = 1;
  int64_t log_every_ = 1, steps_ = 0;
  double grad_clip_ = 0.0;
};

}  // namespace plait
