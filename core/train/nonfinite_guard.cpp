#include "train/nonfinite_guard.hpp"

#include <cmath>

#include <ATen/ATen.h>

#include "distributed/rank_device.hpp"
#include "log/logging.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace {

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

NonFiniteGuard::NonFiniteGuard(const RunPlan& plan) : plan_(plan) {
  const TrainSettings& train = plan.config->train();
  skip_ = train.on_nonfinite == "skip";
  limit_ = train.nonfinite_skip_limit;
}

void NonFiniteGuard::after_step(int64_t step, const StepOutcome& out) {
  if (out.result.applied) {
    ++updates_;
    in_a_row_ = 0;
    last_finite_loss_ = out.loss;
    last_finite_step_ = step;
    return;
  }
  const std::string what = what_happened(step, out);
  const Options& train = plan_.config->table("train");
  const TrainSettings& settings = plan_.config->train();
  const std::string hint =
      concat("lower [train] lr (", short_number(settings.lr), ", ", train.where("lr"),
             ") or clip the gradients harder ([train] grad_clip), check the data, or set [train] on_nonfinite = "
             "\"skip\" to skip such steps");
  if (!skip_) throw Error(what, hint);
  ++skipped_;
  if (++in_a_row_ >= limit_) {
    throw Error(concat(what, "; that is ", in_a_row_, " skipped steps in a row, the limit ([train] nonfinite_skip_limit = ",
                       limit_, ", ", train.where("nonfinite_skip_limit"), ")"),
                hint);
  }
  if (plan_.world->rank() == 0) core_log().warn(what, "; the step was skipped (", skipped_, " so far)");
}

std::string NonFiniteGuard::what_happened(int64_t step, const StepOutcome& out) const {
  const bool here = !out.loss_finite_here || !out.result.grads_finite_here;
  const std::vector<int> ranks = ranks_that_saw_it(here);
  std::string text = std::isfinite(out.loss)
                         ? concat("step ", step, ": the gradient norm is ", short_number(out.result.grad_norm), " (the loss, ",
                                  short_number(out.loss), ", is finite)")
                         : concat("step ", step, ": the loss is ", short_number(out.loss));
  if (ranks.empty()) {
    text += "; no rank's own part was non-finite (their sum overflowed)";
  } else {
    text += concat("; rank ", ranks.front(), " saw it first", ranks.size() > 1 ? " (ranks " + list(ranks) + ")" : "");
  }
  if (last_finite_step_ > 0) {
    text += concat("; the last finite loss was ", short_number(last_finite_loss_), " at step ", last_finite_step_);
  } else {
    text += "; no step before it had a finite loss";
  }
  return text;
}

// The ranks whose own loss or gradients were not finite, in rank order: one small
// all-reduce over every rank.
std::vector<int> NonFiniteGuard::ranks_that_saw_it(bool here) const {
  World& world = *plan_.world;
  at::Tensor flags = at::zeros({world.size()}, at::TensorOptions().dtype(at::kInt));
  flags[world.rank()] = here ? 1 : 0;
  if (Communicator* everyone = world.all()) {
    const bool cuda = plan_.config->train().device == "cuda";
    at::Tensor staged = flags.to(rank_device(cuda, plan_.local_rank));
    AllReduceOptions o;
    o.tag = {"core", "nonfinite-ranks", "", -1};
    everyone->all_reduce(staged, o)->wait();
    flags = staged.cpu();  // only on the way to stopping or skipping: outside the hot path's accounting
  }
  std::vector<int> out;
  for (int r = 0; r < world.size(); ++r) {
    if (flags[r].item<int>() != 0) out.push_back(r);
  }
  return out;
}

}  // namespace plait
