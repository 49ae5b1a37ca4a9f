#include "run/tensor_shapes_check.hpp"

#include "metrics/metrics_writer.hpp"
#include "debug/plugin_call.hpp"
#include "model/adapted_layers.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "model/precision.hpp"
#include "model/recorded_linears.hpp"
#include "train/frozen_parameters.hpp"
#include "plait/sdk/adapter.hpp"
#include "plait/sdk/tensor_parallel.hpp"
#include "loader/plugin_instance.hpp"

namespace plait {
namespace {

// A tensor-parallel group that has members but never talks: layers keep it for their
// forward, which a shape check does not run.
class ShapeOnlyGroup final : public Communicator {
 public:
  explicit ShapeOnlyGroup(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string backend() const override { return "shape-check"; }
  std::shared_ptr<Work> all_reduce(at::Tensor&, const AllReduceOptions&) override { return refuse(); }
  std::shared_ptr<Work> reduce_scatter(at::Tensor&, const at::Tensor&, const ReduceScatterOptions&) override {
    return refuse();
  }
  std::shared_ptr<Work> all_gather(at::Tensor&, const at::Tensor&, const CommOptions&) override { return refuse(); }
  std::shared_ptr<Work> broadcast(at::Tensor&, const BroadcastOptions&) override { return refuse(); }
  std::shared_ptr<Work> send(const at::Tensor&, const PointToPointOptions&) override { return refuse(); }
  std::shared_ptr<Work> recv(at::Tensor&, const PointToPointOptions&) override { return refuse(); }
  std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>&) override { return {refuse()}; }
  std::shared_ptr<Work> barrier(const CommOptions&) override { return refuse(); }

 private:
  [[noreturn]] static std::shared_ptr<Work> refuse() {
    throw Error("the tensor plugin communicated while its layers were being built for the shape check",
                "a layer factory may keep its group, but only use it in forward and backward");
  }
  int size_;
};

class QuietLogger final : public Logger {
 public:
  void write(LogLevel, std::string_view) override {}
};

// Each site's cost as the adapter states it, for activations of the run's dtype.
std::vector<AdapterSiteCost> site_costs(const AdaptedFactory& factory, Adapter& adapter, const std::string& name,
                                        const ResolvedConfig& config) {
  const int64_t element_bytes = activation_element_bytes(precision_from(config.train().dtype));
  const AdapterCostModel* model = extension<AdapterCostModel>(adapter);
  std::vector<AdapterSiteCost> out;
  for (const AdapterSite& site : factory.sites()) {
    AdapterSiteCost c{site.spec.name, site.split, site.shards, site.spec.in_features, std::nullopt};
    if (model != nullptr) c.cost = call_detached_plugin(name, "cost", [&] { return model->cost(site, element_bytes); });
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

void check_tensor_shapes(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                         const MeshShape& mesh) {
  if (config.parallel().tensor == "none" || mesh.tp == 1) return;
  build_shape_model(config, registry, model, mesh);
}

StageModel build_shape_model(const ResolvedConfig& config, const PluginRegistry& registry, const ModelSpec& model,
                             const MeshShape& mesh, int64_t* sequence_shards,
                             std::vector<AdapterSiteCost>* adapter_costs) {
  const Options& parallel = config.table("parallel");
  const std::string& name = config.parallel().tensor;
  const std::string& adapter_name = config.parallel().adapter;
  const bool tensor_parallel = name != "none" && mesh.tp > 1;
  if (sequence_shards != nullptr) *sequence_shards = 1;
  StepMetrics metrics;
  PluginInstance<TensorParallel> tensor;
  QuietLogger quiet;
  ShapeOnlyGroup group(mesh.tp);
  // With an adapter, through the tensor plugin's AdapterHost as a rank builds it: its
  // refusals (a target it cannot place) come here, before launch.
  PluginInstance<Adapter> adapter;
  std::set<const void*> linears;
  if (adapter_name != "none") adapter = make_plugin<Adapter>(registry, config.table(adapter_name), adapter_name, {});
  StageModel whole = at_place(parallel.where(tensor_parallel ? "tp" : "adapter"), [&] {
    std::shared_ptr<LayerFactory> factory = make_dense_layer_factory();
    if (tensor_parallel) {
      tensor = make_plugin<TensorParallel>(registry, config.table(name), name, {.metrics = &metrics},
                                           {0, static_cast<int>(mesh.world())});
      tensor.context->log = &quiet;  // the check builds a rank's layers once more: no second "megatron: ..." line
      factory = tensor.plugin->layer_factory({.tp_group = &group});
      if (sequence_shards != nullptr) *sequence_shards = factory->sequence_shards();
    }
    std::shared_ptr<AdaptedFactory> adapted;
    if (adapter) factory = adapted = std::make_shared<AdaptedFactory>(factory, *adapter.plugin);
    RecordedLinears built(factory);
    StageModel model_on_meta = call_detached_plugin(adapter ? adapter_name : name, "layers", [&] {
      return build_model(model, built, {0, at::TensorOptions().dtype(at::kFloat).device(at::kMeta)});
    });
    linears = built.weights();
    if (adapter_costs != nullptr) {
      *adapter_costs = adapted ? site_costs(*adapted, *adapter.plugin, adapter_name, config) : std::vector<AdapterSiteCost>{};
    }
    return model_on_meta;
  });
  // As a rank marks and stores them: the planner counts them apart, at their own size.
  freeze_parameters(whole, config.table("train"));
  store_frozen_linears(whole, linears, config.table("train"));
  return whole;
}

}  // namespace plait
