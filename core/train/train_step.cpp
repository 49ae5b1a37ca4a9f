#include "train/train_step.hpp"

#include <chrono>
#include <cmath>

#include <ATen/ATen.h>

#include "data/make_sampler.hpp"

namespace plait {

StepRunner::StepRunner(const RunPlan& plan, Rank& rank, DebugDumps& dumps) : plan_(plan), rank_(rank), dumps_(dumps) {
  const Options& train = plan.config->table("train");
  const Mesh& mesh = plan.world->mesh();
  const auto seed = static_cast<uint64_t>(train.get<int64_t>("seed"));
  sampler_ = make_sampler(plan.config->table("data"), plan.model, seed, mesh.shape().dp, mesh.coords().dp);
  lr_ = {train.get<std::string>("lr_schedule"), train.get<double>("lr"), train.get<int64_t>("warmup_steps"),
         train.get<int64_t>("steps"), train.get<double>("min_lr_ratio")};
  accum_ = train.get<int64_t>("grad_accum");
  grad_clip_ = train.get<double>("grad_clip");
  const Options& debug = plan.config->table("debug");
  spoiled_step_ = debug.get<int64_t>("nonfinite_step");
  spoiled_rank_ = debug.get<int64_t>("nonfinite_rank");
}

StepOutcome StepRunner::run(int64_t step, int64_t updates) {
  const auto start = std::chrono::steady_clock::now();
  StepOutcome out;
  const std::vector<Batch> batches = next_batches();
  double local_tokens = 0.0;
  for (const auto& b : batches) local_tokens += static_cast<double>(b.targets.ne(-1).sum().item<int64_t>());
  // The loss of a step is normalised by the tokens of the whole global batch.
  out.tokens = static_cast<int64_t>(global_sum(local_tokens, {Axis::dp}, "token-count"));
  out.schedule = rank_.executor->run(batches, static_cast<double>(out.tokens), dumps_.requests(step));
  dumps_.after_schedule(step, batches, out.schedule);
  if (step == spoiled_step_ && plan_.world->rank() == spoiled_rank_) out.schedule.loss_sum = std::nan("");
  out.loss_finite_here = std::isfinite(out.schedule.loss_sum);
  // Only the last stage computes the loss: the pipeline group sums it to every stage.
  out.loss = global_sum(out.schedule.loss_sum, {Axis::dp, Axis::pp}, "loss-sum") / static_cast<double>(out.tokens);
  out.lr = lr_.at(step);
  out.result = rank_.dp.plugin->step(
      {.step = updates + 1, .lr = out.lr, .grad_clip = grad_clip_, .loss_finite = std::isfinite(out.loss)});
  if (out.result.applied) rank_.tied->after_step(*rank_.dp.plugin);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::vector<Batch> StepRunner::next_batches() {
  std::vector<Batch> batches;
  for (int64_t i = 0; i < accum_; ++i) batches.push_back(sampler_->next());
  return batches;
}

// Summed over the groups of `axes` in turn, in float64. The core's small collectives use
// the compute device: NCCL takes no host tensors.
double StepRunner::global_sum(double local, std::initializer_list<Axis> axes, const std::string& what) const {
  at::Tensor t = at::full({1}, local, at::TensorOptions().dtype(at::kDouble).device(rank_.device));
  for (Axis axis : axes) {
    Communicator* group = plan_.world->group(axis);
    if (group == nullptr) continue;
    AllReduceOptions o;
    o.tag = {"core", axis == Axis::pp ? what + "-pp" : what, "", -1};
    group->all_reduce(t, o)->wait();
  }
  return t.item<double>();
}

}  // namespace plait
