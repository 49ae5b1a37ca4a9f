#include "train/resume.hpp"

#include <chrono>

#include "debug/plugin_call.hpp"
#include "checkpoint/checkpoint_location.hpp"
#include "checkpoint/state_parts.hpp"
#include "log/logging.hpp"
#include "train/frozen_parameters.hpp"
#include "util/human_bytes.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace fs = std::filesystem;

std::optional<fs::path> resume_point(const RunPlan& plan) {
  if (!plan.resume_from.empty()) return fs::path(plan.resume_from);
  return checkpoint::resume_source(plan.config->table("checkpoint"), plan.out_dir);
}

Resumed load_checkpoint(const RunPlan& plan, Rank& rank, const fs::path& folder) {
  const auto start = std::chrono::steady_clock::now();
  checkpoint::CheckpointReader reader(folder);
  checkpoint::CheckpointStateSource source(reader, rank.layouts);
  call_plugin(rank.dp.context->plugin_name, "load_state", [&] { rank.dp.plugin->load_state(source); });
  load_frozen_parameters(source, rank.stages.model);
  rank.tied->after_step(*rank.dp.plugin);
  const nlohmann::json& trainer = reader.index().state.at("trainer");
  Resumed out;
  out.progress = {.step = trainer.at("step").get<int64_t>(),
                  .updates = trainer.at("updates").get<int64_t>(),
                  .skipped = trainer.at("skipped").get<int64_t>(),
                  .samples = trainer.at("samples").get<int64_t>(),
                  .tokens = trainer.at("tokens").get<int64_t>()};
  out.data = reader.index().state.at("data").dump();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  core_log().info("resumed from ", folder.string(), " at step ", out.progress.step, ": read ", reader.bytes_read(),
                  " bytes (", human_bytes(reader.bytes_read()), ") in ", seconds_text(seconds));
  plan.world->stats().drain();  // the load's traffic is not a step's
  return out;
}

}  // namespace plait
