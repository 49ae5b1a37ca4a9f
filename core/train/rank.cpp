#include "train/rank.hpp"

#include "debug/plugin_call.hpp"
#include "distributed/rank_device.hpp"
#include "memory/rank_memory.hpp"
#include "distributed/tensor_gather.hpp"
#include "model/adapted_layers.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "model/recorded_linears.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "train/activation_checkpoint.hpp"
#include "train/frozen_parameters.hpp"
#include "checkpoint/state_parts.hpp"
#include "train/initial_weights.hpp"
#include "train/resume.hpp"

namespace plait {
namespace {

template <class Interface>
PluginInstance<Interface> make_plugin(const RunPlan& plan, const std::string& name, Rank& rank) {
  return plait::make_plugin<Interface>(*plan.registry, plan.config->table(name), name,
                                       {.metrics = &rank.metrics, .device = &rank.device_gauges},
                                       {plan.world->rank(), plan.world->size()});
}

at::Device compute_device(const RunPlan& plan) {
  if (plan.on_meta) return at::Device(at::kMeta);
  const at::Device device = rank_device(plan.config->train().device == "cuda", plan.local_rank);
  use_rank_device(device);  // a single process has no communicators that set it before
  start_rank_memory(device);
  return device;
}

// 1. The tensor plugin's factory makes sharded layers; without one, dense layers. An
// adapter adds its layers beside the linears and freezes the rest.
void apply_tensor_parallel(const RunPlan& plan, Rank& rank) {
  const std::string& name = plan.config->parallel().tensor;
  if (name == "none") {
    rank.factory = make_dense_layer_factory();
  } else {
    rank.tensor = make_plugin<TensorParallel>(plan, name, rank);
    rank.factory = call_plugin(name, "layer_factory", [&] {
      return rank.tensor.plugin->layer_factory({.tp_group = plan.world->group(Axis::tp)});
    });
  }
  if (const std::string& adapter = plan.config->parallel().adapter; adapter != "none") {
    rank.adapter = make_plugin<Adapter>(plan, adapter, rank);
    rank.factory = std::make_shared<AdaptedFactory>(rank.factory, *rank.adapter.plugin);
  }
}

// 2-3. The model through the factory, with real parameters only in the units this
// pipeline rank runs (and those whose parameters they borrow); the rest stay shapes on
// the meta device and are dropped once this rank's stages are cut out. Parameters tied
// across stages are mirrored.
void build_stages(const RunPlan& plan, Rank& rank) {
  const Mesh& mesh = plan.world->mesh();
  const int64_t pp = mesh.shape().pp, pp_rank = mesh.coords().pp;
  const PipelinePlan& pipeline = *plan.pipeline;
  const auto seed = static_cast<uint64_t>(plan.config->train().seed);
  const InitSpec init{seed, at::TensorOptions().dtype(rank.precision.param_dtype).device(rank.device)};
  const std::vector<bool> materialised = units_to_materialise(pipeline.shapes, pipeline.partition, pp, pp_rank);
  RecordedLinears linears(rank.factory);
  const StageModel whole = build_model(plan.model, linears, init, [&](std::size_t unit) { return materialised[unit]; });
  const Options& train = plan.config->table("train");
  freeze_parameters(whole, train);
  for (const auto& p : whole.all_parameters()) rank.splits[p.name] = p.split;
  if (auto from = plan.config->table("model").find<std::string>("init_from"); from && !plan.on_meta) {
    // A resumed run's checkpoint holds every weight, frozen ones too: the initial ones would be overwritten.
    if (const auto resumed = resume_point(plan)) {
      if (plan.world->rank() == 0) {
        core_log().info("[model] init_from (", plan.config->table("model").where("init_from"), ") is not read: the run "
                        "resumes from ", resumed->string(), ", which holds every weight");
      }
    } else {
      load_initial_weights(*from, plan.model, whole, plan.world->mesh(), plan.config->parallel().adapter != "none");
    }
  }
  store_frozen_linears(whole, linears.weights(), train);
  rank.stages = rank_stages(whole, pipeline.partition, pp, pp_rank);
  const Mesh& m = plan.world->mesh();
  rank.layouts = checkpoint::layouts_of(rank.stages.model, m.shape().tp, m.coords().tp);
  rank.tied = std::make_unique<TiedParameters>(whole, pipeline.partition, pp, pp_rank, plan.world->group_maker(Axis::pp));
  rank.tied->unlink_borrowed(rank.stages.model);
}

// 5-6. Offload places model state; data parallel wraps the stages and owns the optimizer.
void apply_data_parallel(const RunPlan& plan, Rank& rank) {
  const ParallelSettings& parallel = plan.config->parallel();
  const TrainSettings& train = plan.config->train();
  if (const std::string& name = parallel.offload; name != "none") {
    rank.offload = make_plugin<Offload>(plan, name, rank);
  }
  rank.dp = make_plugin<DataParallel>(plan, parallel.data, rank);
  World& world = *plan.world;
  call_plugin(parallel.data, "setup", [&] {
    rank.dp.plugin->setup({
        .model = &rank.stages.model,
        .adamw = {.beta1 = train.beta1,
                  .beta2 = train.beta2,
                  .eps = train.eps,
                  .weight_decay = train.weight_decay},
        .dp_group = world.group(Axis::dp),
        .groups = world.group_maker(Axis::dp),
        .bf16 = rank.precision.autocast_bf16,
        .offload = rank.offload.plugin.get(),
        .tp_group = world.group(Axis::tp),
        .pp_group = world.group(Axis::pp),
    });
  });
  rank.tied->attach(rank.stages.model);
}

// 7. The executor that plays this rank's part of the checked schedule.
void make_executor(const RunPlan& plan, Rank& rank) {
  const SchedulePlan& schedule = plan.pipeline->schedule;
  const auto pp_rank = static_cast<std::size_t>(plan.world->mesh().coords().pp);
  rank.executor = std::make_unique<PipelineExecutor>(ExecutorSetup{
      .model = &rank.stages.model,
      .units_of = rank.stages.units_of,
      .spec = schedule.spec,
      .actions = schedule.ranks[pp_rank],
      .pp_group = plan.world->group(Axis::pp),
      .dp = rank.dp.plugin.get(),
      .dp_name = rank.dp.context->plugin_name,
      .factory = rank.factory.get(),
      .tied = rank.tied.get(),
      .precision = rank.precision,
      .device = rank.device,
      .activation_dtype = rank.precision.param_dtype,
      .hidden = plan.model.n_embd,
      .seed = static_cast<uint64_t>(plan.config->train().seed),
  });
}

}  // namespace

std::unique_ptr<Rank> build_rank(const RunPlan& plan) {
  auto rank = std::make_unique<Rank>();
  rank->precision = precision_from(plan.config->train().dtype);
  rank->device = compute_device(plan);
  apply_tensor_parallel(plan, *rank);
  build_stages(plan, *rank);
  apply_activation_checkpointing(rank->stages.model,  // 4.
                                 plan.config->train().activation_checkpointing);
  apply_data_parallel(plan, *rank);
  make_executor(plan, *rank);
  plan.world->stats().drain();  // setup traffic (the initial broadcast) is not a step's
  return rank;
}

NamedTensors gather_whole(const RunPlan& plan, const Rank& rank, const NamedTensors& local) {
  const Mesh& mesh = plan.world->mesh();
  NamedTensors whole = gather_tensor_parallel(local, rank.splits, plan.world->group(Axis::tp), rank.device);
  if (mesh.coords().dp != 0 || mesh.coords().tp != 0) return whole;
  return gather_pipeline_stages(std::move(whole), plan.world->group(Axis::pp), rank.device);
}

}  // namespace plait
