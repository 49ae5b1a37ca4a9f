#include "train/train_step.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include <ATen/ATen.h>

#include "debug/plugin_call.hpp"
#include "data/make_sampler.hpp"
#include "debug/fault_injector.hpp"
#include "timing/phase_clock.hpp"
#include "train/step_report.hpp"

namespace plait {
namespace {

// The step's figures, read with the gradient norm in its one read (StepArgs::loss_figures),
// by position: the loss, this rank's share of it, then the device gauges plugins left
// (DeviceGauges).
struct Figure {
  static constexpr std::size_t global_loss_per_token = 0, loss_here = 1, first_device_gauge = 2;
};

}  // namespace

StepRunner::StepRunner(const RunPlan& plan, Rank& rank, DebugDumps& dumps) : plan_(plan), rank_(rank), dumps_(dumps) {
  const TrainSettings& train = plan.config->train();
  const Mesh& mesh = plan.world->mesh();
  const auto seed = static_cast<uint64_t>(train.seed);
  sampler_ = make_sampler(plan.config->table("data"), plan.model, seed, mesh.shape().dp, mesh.coords().dp);
  lr_ = {train.lr_schedule, train.lr, train.warmup_steps,
         train.steps, train.min_lr_ratio};
  accum_ = train.grad_accum;
  log_every_ = train.log_every;
  steps_ = train.steps;
  grad_clip_ = train.grad_clip;
}

StepOutcome StepRunner::run(int64_t step, int64_t updates, const std::function<void()>& before_update) {
  StepOutcome out;
  const auto [batches, counted] = draw(out);
  // Injected faults (held by the rank's world): kill, hang and the like strike here; a slow one is a
  // straggler's extra compute; a nonfinite one spoils this rank's loss.
  FaultInjector* injected = plan_.world->faults();
  const FaultInjector::InStep faults = injected ? injected->at_step(step) : FaultInjector::InStep{};
  if (faults.slow_ms > 0.0) straggle(faults.slow_ms);
  StepRequests requests = dumps_.requests(step);
  requests.time_span = is_logged_step(step, log_every_, steps_);
  out.schedule = rank_.executor->run(batches, counted, requests);
  dumps_.after_schedule(step, batches, out.schedule);
  const at::Tensor loss_here = faults.spoil_loss ? out.schedule.loss_sum * std::nan("") : out.schedule.loss_sum;
  out.lr = lr_.at(step);
  // The global loss, this rank's share and the plugins' device gauges are read with the
  // gradient norm, in the step's one read.
  at::Tensor figures = at::stack({global_loss(loss_here) / counted, loss_here});
  const DeviceGauges::Taken gauges = rank_.device_gauges.take(rank_.device);
  if (!gauges.keys.empty()) figures = at::cat({figures, gauges.values});
  {
    const PhaseScope timed(Phase::checkpoint);
    before_update();
  }
  update(out, updates, figures, gauges);
  return out;
}

// The step's batches and the global batch's count of counted targets (what the loss is
// divided by), timed as data; the tokens and that count into `out` too.
std::pair<std::vector<Batch>, at::Tensor> StepRunner::draw(StepOutcome& out) {
  const PhaseScope timed(Phase::data);
  std::vector<Batch> batches = next_batches();
  for (const Batch& b : batches) {
    out.tokens += b.targets.numel() * plan_.world->mesh().shape().dp;
    out.counted_tokens += b.counted;
  }
  at::Tensor counted = counted_tokens(batches, out.counted_tokens);
  return {std::move(batches), std::move(counted)};
}

void StepRunner::straggle(double ms) {
  const PhaseScope timed(Phase::forward);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// The data plugin's step with the figures to read; what it read into `out`.
void StepRunner::update(StepOutcome& out, int64_t updates, const at::Tensor& figures,
                        const DeviceGauges::Taken& gauges) {
  const PhaseScope timed(Phase::optimizer);
  out.result = call_plugin(rank_.dp.context->plugin_name, "step", [&] {
    return rank_.dp.plugin->step({.step = updates + 1,
                                  .lr = out.lr,
                                  .grad_clip = grad_clip_,
                                  .loss_figures = figures,
                                  .reader = &rank_.host_reads});
  });
  const std::vector<double>& read = out.result.loss_figures;
  out.loss = read.at(Figure::global_loss_per_token);
  out.loss_finite_here = std::isfinite(read.at(Figure::loss_here));
  for (std::size_t i = 0; i < gauges.keys.size(); ++i) rank_.metrics.gauge(gauges.keys[i], read.at(Figure::first_device_gauge + i));
  if (out.result.applied) rank_.tied->after_step(*rank_.dp.plugin);
}

std::vector<Batch> StepRunner::next_batches() {
  std::vector<Batch> batches;
  for (int64_t i = 0; i < accum_; ++i) batches.push_back(sampler_->next());
  return batches;
}

// The sampler counts the global batch's targets that count (every data-parallel rank's
// rows), so the divisor is known without a collective; this rank's own rows are checked
// against it where they can be: host data, no device read. A step with nothing counted
// divides by 1: a zero loss and zero gradients, as in the single process.
at::Tensor StepRunner::counted_tokens(const std::vector<Batch>& batches, int64_t counted) const {
  for (const auto& b : batches) {
    // The loader's targets are host tensors: read in place, no device is waited for.
    const at::Tensor t = b.targets.contiguous();
    const int64_t* v = t.data_ptr<int64_t>();
    int64_t here = 0;
    bool ids_or_ignored = true;
    for (const int64_t* target = v; target != v + t.numel(); ++target) {
      here += *target != -1 ? 1 : 0;
      ids_or_ignored = ids_or_ignored && *target >= -1;
    }
    PLAIT_CHECK(ids_or_ignored && here <= b.counted,
                concat("rank ", plan_.world->rank(), ": batch ", b.index, " has ", here,
                       " counted targets of its own and the sampler counts ", b.counted, " in the global batch"),
                "targets are token ids or -1 (not counted), and the global count covers every rank's rows");
  }
  const double divisor = static_cast<double>(std::max<int64_t>(counted, 1));
  return at::full({}, divisor, at::TensorOptions().dtype(at::kDouble).device(rank_.device));
}

// `local` (a 0-dim float64 tensor on the compute device: NCCL takes no host tensors)
// summed over `group`, if any, and left on the device.
at::Tensor StepRunner::summed(const at::Tensor& local, Communicator* group, const std::string& what) {
  if (group == nullptr) return local;
  at::Tensor t = local.reshape({1}).clone();
  AllReduceOptions o;
  o.tag = {"core", what, "", -1};
  group->all_reduce(t, o)->wait();
  return t.reshape({});
}

// Only the last stage computes the loss, and each of its tp ranks the same: one sum over
// every rank of the first tp rank's shares (the others add nothing but a non-finite
// value, which must stop every rank).
at::Tensor StepRunner::global_loss(const at::Tensor& loss_here) const {
  const at::Tensor share = plan_.world->mesh().coords().tp == 0 ? loss_here : loss_here * 0.0;
  return summed(share, plan_.world->all(), "loss-sum");
}

}  // namespace plait
