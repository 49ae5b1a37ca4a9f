#pragma once
// A step whose loss or gradient norm is not finite. The core has already withheld its
// update (data_parallel.hpp: no plugin updates weights from such a step); here the run
// stops, on every rank with the same message (the step, the ranks whose own values were
// not finite, the last finite loss, what to change), or, with [train] on_nonfinite =
// "skip", goes on until [train] nonfinite_skip_limit steps in a row were skipped.
#include <cstdint>
#include <string>
#include <vector>

#include "train/train_step.hpp"
#include "train/run_plan.hpp"

namespace plait {

class NonFiniteGuard {
 public:
  explicit NonFiniteGuard(const RunPlan& plan);
  // After every step. Collective when the step was withheld (every rank is then in this
  // branch: the loss and the norm are global). Throws plait::Error to stop the run.
  void after_step(int64_t step, const StepOutcome& out);
  // A resumed run goes on counting from the checkpoint's figures.
  void resume(int64_t updates, int64_t skipped) {
    updates_ = updates;
    skipped_ = skipped;
  }
  int64_t updates() const { return updates_; }        // optimizer updates applied
  int64_t skipped() const { return skipped_; }        // steps withheld so far

 private:
  std::vector<int> ranks_that_saw_it(bool here) const;
  std::string what_happened(int64_t step, const StepOutcome& out) const;

  const RunPlan& plan_;
  bool skip_ = false;
  int64_t limit_ = 0;
  int64_t updates_ = 0, skipped_ = 0, in_a_row_ = 0;
  double last_finite_loss_ = 0.0;
  int64_t last_finite_step_ = 0;
};

}  // namespace plait
