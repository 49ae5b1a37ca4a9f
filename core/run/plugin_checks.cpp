#include "run/plugin_checks.hpp"

#include <map>
#include <utility>

#include "data/make_sampler.hpp"
#include "metrics/metrics_writer.hpp"
#include "plugins/plugin_instance.hpp"
#include "plait/sdk/communicator.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/offload.hpp"
#include "plait/sdk/pipeline.hpp"
#include "plait/sdk/tensor_parallel.hpp"

namespace plait {
namespace {

// `base` with some values replaced: each change is (key, value, where it came from).
Options with_values(const Options& base, const std::vector<std::tuple<std::string, OptionValue, std::string>>& changes) {
  std::map<std::string, OptionValue> values = base.values();
  std::map<std::string, std::string> places;
  std::map<std::string, bool> defaults;
  for (const auto& [key, value] : values) {
    places[key] = base.where(key);
    defaults[key] = base.is_default(key);
  }
  for (const auto& [key, value, place] : changes) {
    values[key] = value;
    places[key] = place;
  }
  return Options(base.table(), std::move(values), std::move(places), std::move(defaults));
}

// The instance as its base class; the registry hands out a pointer to its kind interface.
std::shared_ptr<const Plugin> as_plugin(const PluginRecord& record, std::shared_ptr<void> instance) {
  if (record.kind == DataParallel::kKind) return std::static_pointer_cast<DataParallel>(instance);
  if (record.kind == CommBackend::kKind) return std::static_pointer_cast<CommBackend>(instance);
  if (record.kind == PipelineSchedule::kKind) return std::static_pointer_cast<PipelineSchedule>(instance);
  if (record.kind == TensorParallel::kKind) return std::static_pointer_cast<TensorParallel>(instance);
  return std::static_pointer_cast<Offload>(instance);
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
  if (const std::string name = parallel.get<std::string>("offload"); name != "none") {
    offload = make_plugin<Offload>(registry, config.table(name), name, metrics, 0, mesh.world());
    offload.plugin->configure(offload.context);
  }
  for (const auto& choice : config.plugins()) {
    const PluginRecord& record = *registry.find(choice.name);
    const std::shared_ptr<const Plugin> plugin = as_plugin(record, registry.create(record));
    const RunCheck run{.own = &config.table(choice.name),
                       .model = &dimensions,
                       .parallel = &degrees,
                       .data = &sequences,
                       .train = &config.table("train"),
                       .offload = offload.plugin.get()};
    try {
      plugin->check(run);
    } catch (const Error& e) {
      // A copy made here: the plugin's exception must not outlive its library's objects.
      throw Error(e.what(), e.hint(), e.origin());
    }
  }
}

}  // namespace plait
