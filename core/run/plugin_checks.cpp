#include "run/plugin_checks.hpp"

#include <map>
#include <utility>

#include "config/options_edit.hpp"
#include "data/make_sampler.hpp"
#include "metrics/metrics_writer.hpp"
#include "loader/plugin_instance.hpp"
#include "plait/sdk/comm_backend.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/offload.hpp"
#include "plait/sdk/pipeline.hpp"
#include "plait/sdk/run_check.hpp"
#include "plait/sdk/tensor_parallel.hpp"

namespace plait {
namespace {

// Runs `plugin`'s check on a configured instance of its own kind made for it alone.
template <class Interface>
void check_one(const PluginRegistry& registry, const ResolvedConfig& config, const std::string& name, int world,
               const RunCheck& run) {
  StepMetrics metrics;
  const PluginInstance<Interface> instance =
      make_plugin<Interface>(registry, config.table(name), name, {.metrics = &metrics}, {.rank = 0, .world_size = world});
  try {
    instance.plugin->check(run);
  } catch (const Error& e) {
    // A copy made here: the plugin's exception must not outlive its library's objects.
    throw Error(e.what(), e.hint(), e.origin());
  }
}

}  // namespace

void check_plugins(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                   const MeshShape& mesh) {
  const Options& parallel = config.table("parallel");
  const Options& data = config.table("data");
  const Options dimensions = model_dimensions(model, config.table("model"));
  const Options degrees = with_values(parallel, {{"dp", int64_t{mesh.dp}, parallel.where("dp")},
                                                 {"pp", int64_t{mesh.pp}, parallel.where("pp")},
                                                 {"tp", int64_t{mesh.tp}, parallel.where("tp")}});
  const std::string seq_place = data.has("seq_len") ? data.where("seq_len") : model_place(config.table("model"), "block_size");
  const Options sequences = with_values(data, {{"seq_len", resolve_seq_len(data, model), seq_place}});
  // The offload plugin configured as a rank would, so a data plugin can ask what it offloads.
  StepMetrics metrics;
  PluginInstance<Offload> offload;
  if (const std::string& name = config.parallel().offload; name != "none") {
    offload = make_plugin<Offload>(registry, config.table(name), name, {.metrics = &metrics}, {.rank = 0, .world_size = mesh.world()});
  }
  const RunCheck run{.model = &dimensions,
                     .parallel = &degrees,
                     .data = &sequences,
                     .train = &config.table("train"),
                     .offload = offload.plugin.get()};
  for (const auto& choice : config.plugins()) {
    const std::string& kind = registry.find(choice.name)->kind;
    const int world = mesh.world();
    if (kind == DataParallel::kKind) check_one<DataParallel>(registry, config, choice.name, world, run);
    if (kind == CommBackend::kKind) check_one<CommBackend>(registry, config, choice.name, world, run);
    if (kind == PipelineSchedule::kKind) check_one<PipelineSchedule>(registry, config, choice.name, world, run);
    if (kind == TensorParallel::kKind) check_one<TensorParallel>(registry, config, choice.name, world, run);
    if (kind == Offload::kKind) check_one<Offload>(registry, config, choice.name, world, run);
  }
}

}  // namespace plait
