#include "run/prepare.hpp"

#include <ATen/detail/CUDAHooksInterface.h>

#include "data/make_sampler.hpp"
#include "model/model_zoo.hpp"
#include "pipeline/schedule_plan.hpp"
#include "pipeline/stage_partition.hpp"
#include "plait/sdk/error.hpp"
#include "run/compatibility.hpp"
#include "runtime/torch_info.hpp"

namespace plait {

PluginRegistry discover_plugins(const std::vector<SearchDir>& extra) {
  return PluginRegistry::discover(default_search_dirs(extra), host_abi());
}

// Every rank's schedule is built and played through, and the model cut into its stages
// (on the meta device: no memory), so that a schedule that would hang or a partition that
// cannot be made stops the launch instead of a rank.
static PipelinePlan check_pipeline(const PreparedRun& run) {
  const ConfigEntry* pipeline = run.loaded.tree.find("parallel", "pipeline");
  const ConfigEntry* blocks = run.loaded.tree.find("parallel", "stage_blocks");
  const ConfigEntry* pp = run.loaded.tree.find("parallel", "pp");
  PipelinePlan out;
  SchedulePlan& plan = out.schedule;
  try {
    plan = plan_configured_schedule(*run.registry, *run.config, run.mesh.pp);
  } catch (const Error& e) {
    const ConfigEntry* where = pipeline ? pipeline : pp;
    throw Error(where ? where->source.describe() + ": " + e.what() : std::string(e.what()), e.hint());
  }
  out.shapes = build_meta_model(run.model);
  const auto& counts = run.config->table("parallel").get<std::vector<int64_t>>("stage_blocks");
  try {
    out.partition = partition_stages(out.shapes, plan.spec.stages(), counts,
                     blocks ? blocks->source.describe() + ": [parallel] stage_blocks" : "[parallel] stage_blocks");
  } catch (const Error& e) {
    if (!counts.empty() || pp == nullptr) throw;  // the override's own message names its place
    throw Error(concat(pp->source.describe(), ": [parallel] pp = ", run.mesh.pp, " with ", plan.spec.stages_per_rank,
                       " virtual stage(s) per rank: ", e.what()),
                e.hint());
  }
  return out;
}

PreparedRun prepare_run(const std::string& config_path, const std::vector<std::string>& overrides, int known_world) {
  PreparedRun run;
  run.loaded = load_config(config_path, overrides);
  run.registry = std::make_unique<PluginRegistry>(discover_plugins(config_plugin_dirs(run.loaded.tree)));
  run.registry->throw_if_refused();
  run.config = std::make_unique<ResolvedConfig>(resolve_config(run.loaded.tree, *run.registry, known_world > 0));
  check_compatibility(*run.config, *run.registry);
  run.model = resolve_model_spec(run.config->table("model"));
  resolve_seq_len(run.config->table("data"), run.model);
  const ConfigEntry* device = run.loaded.tree.find("train", "device");
  PLAIT_CHECK(run.config->table("train").get<std::string>("device") != "cuda" ||
                  at::detail::getCUDAHooks().getNumGPUs() > 0,
              concat(device ? device->source.describe() + ": " : std::string(),
                     "[train] device = \"cuda\", but no CUDA device is visible"),
              "run on a machine with a GPU, or set device = \"cpu\"");

  const Options& parallel = run.config->table("parallel");
  run.mesh = resolve_mesh(static_cast<int>(parallel.get<int64_t>("dp")), static_cast<int>(parallel.get<int64_t>("pp")),
                          static_cast<int>(parallel.get<int64_t>("tp")), known_world);
  run.world_size = run.mesh.world();
  run.pipeline = check_pipeline(run);
  const Options& dist = run.config->table("distributed");
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0)); };
  run.dist = {ms(dist.get<double>("rendezvous_timeout_s")), ms(dist.get<double>("collective_timeout_s")),
              ms(dist.get<double>("hang_warning_s"))};
  return run;
}

}  // namespace plait
