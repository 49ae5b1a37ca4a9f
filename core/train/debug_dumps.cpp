#include "train/debug_dumps.hpp"

#include <filesystem>

#include "io/safetensors.hpp"

namespace plait {
namespace fs = std::filesystem;

DebugDumps::DebugDumps(const RunPlan& plan, Rank& rank) : plan_(plan), rank_(rank), out_(plan.out_dir) {
  const Mesh& mesh = plan.world->mesh();
  logits_holder_ = mesh.coords().pp == mesh.shape().pp - 1 && mesh.coords().dp == 0;
  logits_writer_ = logits_holder_ && mesh.coords().tp == 0;
  dump_logits_ = plan.config->debug().dump_logits && !plan.on_meta;
  dump_grads_ = plan.config->debug().dump_grads && !plan.on_meta;
}

StepRequests DebugDumps::requests(int64_t step) const {
  return {.keep_first_logits = logits_holder_ && dump_logits_ && step == 1};
}

void DebugDumps::after_schedule(int64_t step, const std::vector<Batch>& batches, const ScheduleOutcome& outcome) {
  if (logits_writer_ && dump_logits_ && step == 1) {
    save_safetensors((fs::path(out_) / "debug_logits.safetensors").string(),
                     {{"inputs", batches[0].inputs}, {"targets", batches[0].targets}, {"logits", outcome.first_logits}});
  }
  if (dump_grads_ && step == 1) {
    // Every rank: sharded strategies gather over dp, then tp slices are joined.
    const NamedTensors grads = gather_whole(plan_, rank_, rank_.dp.plugin->full_gradients());
    if (plan_.world->rank() == 0) save_safetensors((fs::path(out_) / "debug_grads.safetensors").string(), grads);
  }
}

}  // namespace plait
