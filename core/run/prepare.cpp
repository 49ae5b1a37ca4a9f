#include "run/prepare.hpp"

#include "memory/state_budget.hpp"

#include "data/data_check.hpp"
#include "debug/fault_plan.hpp"
#include "debug/plugin_call.hpp"
#include "data/make_sampler.hpp"
#include "model/adapted_layers.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "train/frozen_parameters.hpp"
#include "pipeline/schedule_plan.hpp"
#include "pipeline/stage_partition.hpp"
#include "plait/sdk/error.hpp"
#include "run/compatibility.hpp"
#include "run/config_checks.hpp"
#include "run/plugin_checks.hpp"
#include "run/resume_check.hpp"
#include "run/tensor_shapes_check.hpp"
#include "loader/host_abi.hpp"
#include "log/logging.hpp"

namespace plait {

PluginRegistry discover_plugins(const std::vector<SearchDir>& extra) {
  return PluginRegistry::discover(default_search_dirs(extra), host_abi());
}

PipelinePlan plan_pipeline(const ResolvedConfig& config, const PluginRegistry& registry, const MeshShape& mesh,
                           StageModel shapes) {
  const Options& parallel = config.table("parallel");
  const std::string schedule_place =
      parallel.where(!parallel.is_default("pipeline") || parallel.is_default("pp") ? "pipeline" : "pp");
  PipelinePlan out;
  out.schedule = at_place(schedule_place, [&] { return plan_configured_schedule(registry, config, mesh.pp); });
  out.shapes = std::move(shapes);
  const std::vector<int64_t>& counts = config.parallel().stage_blocks;
  try {
    out.partition = partition_stages(out.shapes, out.schedule.spec.stages(), counts,
                                     concat(parallel.where("stage_blocks"), ": [parallel] stage_blocks"));
  } catch (const Error& e) {
    if (!counts.empty()) throw;  // the override's own message names its place
    throw Error(concat(parallel.where("pp"), ": [parallel] pp = ", mesh.pp, " with ",
                       out.schedule.spec.stages_per_rank, " virtual stage(s) per rank: ", e.what()),
                e.hint(), e.origin());
  }
  return out;
}

namespace {

// The whole model on the meta device, with [parallel] adapter's layers and its targets
// checked against the model's linears.
StageModel meta_model(PreparedRun& run) {
  const ResolvedConfig& config = *run.config;
  const std::string& name = config.parallel().adapter;
  if (name == "none") return build_meta_model(run.model);
  run.adapter = make_plugin<Adapter>(*run.registry, config.table(name), name, {}, {0, static_cast<int>(run.world_size)});
  return call_detached_plugin(name, "check_targets", [&] {
    AdaptedFactory factory(make_dense_layer_factory(), *run.adapter.plugin);
    StageModel shapes = build_model(run.model, factory, {0, at::TensorOptions().dtype(at::kFloat).device(at::kMeta)});
    check_adapted(factory, *run.adapter.plugin, config.table("parallel").where("adapter"));
    return shapes;
  });
}

}  // namespace

PreparedRun prepare_run(const std::string& config_path, const std::vector<std::string>& overrides,
                        const KnownWorld& known_world, bool scan_data) {
  PreparedRun run;
  run.loaded = load_config(config_path, overrides);
  run.registry = std::make_unique<PluginRegistry>(discover_plugins(config_plugin_dirs(run.loaded.tree)));
  run.registry->throw_if_refused();
  run.config = std::make_unique<ResolvedConfig>(resolve_config(run.loaded.tree, *run.registry, known_world.processes > 0));
  const ResolvedConfig& config = *run.config;
  check_compatibility(config, *run.registry);
  run.model = resolve_model_spec(config.table("model"));
  resolve_seq_len(config.table("data"), run.model);
  check_devices(config);
  check_optimizer_numbers(config);
  run.mesh = resolve_configured_mesh(config, known_world);
  run.world_size = run.mesh.world();
  check_mesh_roles(config, run.mesh);
  check_settings_take_effect(config, run.mesh);
  run.pipeline = plan_pipeline(config, *run.registry, run.mesh, meta_model(run));
  frozen_names(run.pipeline.shapes, config.table("train"));  // its patterns refused here, before launch
  check_frozen_dtype(config.table("train"), config.parallel().adapter);
  check_init_from(run);
  check_plugins(config, *run.registry, run.model, run.mesh);
  check_tensor_shapes(config, *run.registry, run.model, run.mesh);
  check_state_fits_memory_limit(run);  // a budget the state alone exceeds fails at step 1: refused now
  check_data(config.table("data"), run.model, config.table("model"), run.mesh.dp, scan_data);
  const DistributedSettings& dist = config.distributed();
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0)); };
  run.dist = {ms(dist.rendezvous_timeout_s), ms(dist.collective_timeout_s), ms(dist.hang_warning_s),
              static_cast<std::size_t>(dist.flight_recorder_ops)};
  return run;
}

void log_config_notes(const PreparedRun& run) {
  for (const std::string& note : run.config->notes()) core_log().warn(note);
  for (const std::string& note : older_fault_key_notes(*run.config)) core_log().warn(note);
}

}  // namespace plait
