#include "train/debug_dumps.hpp"

#include <chrono>
#include <filesystem>

#include "io/safetensors.hpp"
#include "pipeline/measured_trace.hpp"
#include "run/prepare.hpp"

namespace plait {
namespace fs = std::filesystem;

DebugDumps::DebugDumps(const RunPlan& plan, Rank& rank) : plan_(plan), rank_(rank), out_(plan.out_dir) {
  const Options& debug = plan.config->table("debug");
  const Mesh& mesh = plan.world->mesh();
  logits_holder_ = mesh.coords().pp == mesh.shape().pp - 1 && mesh.coords().dp == 0;
  logits_writer_ = logits_holder_ && mesh.coords().tp == 0;
  dump_logits_ = debug.get<bool>("dump_logits");
  dump_grads_ = debug.get<bool>("dump_grads");
  trace_step_ = debug.get<int64_t>("pipeline_trace");
}

StepRequests DebugDumps::requests(int64_t step) const {
  return {.keep_first_logits = logits_holder_ && dump_logits_ && step == 1, .keep_timeline = step == trace_step_};
}

void DebugDumps::after_schedule(int64_t step, const std::vector<Batch>& batches, const ScheduleOutcome& outcome) {
  if (logits_writer_ && dump_logits_ && step == 1) {
    save_safetensors((fs::path(out_) / "debug_logits.safetensors").string(),
                     {{"inputs", batches[0].inputs}, {"targets", batches[0].targets}, {"logits", outcome.first_logits}});
  }
  if (step == trace_step_) {
    const auto timeout = std::chrono::milliseconds(
        static_cast<int64_t>(plan_.config->table("distributed").get<double>("rendezvous_timeout_s") * 1000.0));
    write_measured_trace(*plan_.world, outcome.timeline, plan_.pipeline->schedule.spec, step, timeout,
                         (fs::path(out_) / "pipeline-trace.json").string());
  }
  if (dump_grads_ && step == 1) {
    // Every rank: sharded strategies gather over dp, then tp slices are joined.
    const NamedTensors grads = gather_whole(plan_, rank_, rank_.dp.plugin->full_gradients());
    if (plan_.world->rank() == 0) save_safetensors((fs::path(out_) / "debug_grads.safetensors").string(), grads);
  }
}

}  // namespace plait
