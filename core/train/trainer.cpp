#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "data/make_sampler.hpp"
#include "distributed/tensor_gather.hpp"
#include "io/safetensors.hpp"
#include "log/logging.hpp"
#include "memory/tracking_allocator.hpp"
#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "pipeline/measured_trace.hpp"
#include "pipeline/pipeline_executor.hpp"
#include "pipeline/stage_partition.hpp"
#include "pipeline/tied_parameters.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/offload.hpp"
#include "plait/sdk/tensor_parallel.hpp"
#include "metrics/metrics_writer.hpp"
#include "plugins/plugin_instance.hpp"
#include "run/prepare.hpp"
#include "train/activation_checkpoint.hpp"
#include "train/lr_schedule.hpp"
#include "model/precision.hpp"
#include "metrics/progress.hpp"

namespace plait {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

NamedTensorList model_weights(const StageModel& model) {
  NamedTensorList out;
  for (const auto& p : model.parameters()) out.emplace_back(p.name, p.tensor);
  return out;
}

// Sum over a group (identity without one), in float64. The core's small collectives use
// the compute device: NCCL takes no host tensors.
double group_sum(Communicator* group, at::Device device, double value, const char* what) {
  if (group == nullptr) return value;
  at::Tensor t = at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(device));
  AllReduceOptions o;
  o.tag = {"core", what, "", -1};
  group->all_reduce(t, o)->wait();
  return t.item<double>();
}

void add_comm_metrics(nlohmann::ordered_json& record, CommStats& stats) {
  double bytes = 0.0, seconds = 0.0;
  nlohmann::ordered_json per_op = nlohmann::json::object();
  const CommStats::Drained drained = stats.drain();
  for (const auto& [key, c] : drained.by_op) {
    bytes += c.bus_bytes;
    seconds += c.seconds;
    per_op[key] = {{"calls", c.calls}, {"bytes", c.bus_bytes}, {"payload_bytes", c.payload_bytes},
                   {"ms", c.seconds * 1e3}};
  }
  record["comm_bytes"] = bytes;
  record["comm_ms"] = seconds * 1e3;
  record["comm"] = per_op;
  record["comm_bytes_by"] = drained.bus_bytes_by_caller;
}

template <class Interface>
PluginInstance<Interface> make_plugin(const RunPlan& plan, const std::string& name, StepMetrics& step_metrics) {
  return plait::make_plugin<Interface>(*plan.registry, plan.config->table(name), name, step_metrics, plan.world->rank(),
                                       plan.world->size());
}

// One record per rank of this rank's figures (sharded strategies differ by rank), gathered
// over all ranks so that rank 0's metrics.jsonl holds every rank's. Its few bytes are
// counted in the next step's traffic.
nlohmann::ordered_json every_rank(World& world, at::Device device,
                                  const std::vector<std::pair<std::string, int64_t>>& figures) {
  std::vector<int64_t> numbers;
  for (const auto& f : figures) numbers.push_back(f.second);
  at::Tensor mine = at::tensor(numbers, at::TensorOptions().dtype(at::kLong)).to(device);
  at::Tensor all = mine;
  if (Communicator* everyone = world.all()) {
    all = at::empty({mine.numel() * everyone->size()}, mine.options());
    CommOptions o;
    o.tag = {"core", "rank-report", "", -1};
    everyone->all_gather(all, mine, o)->wait();
  }
  all = all.cpu();
  nlohmann::ordered_json out = nlohmann::json::array();
  const auto* values = all.data_ptr<int64_t>();
  for (int64_t r = 0; r < all.numel() / mine.numel(); ++r) {
    nlohmann::ordered_json one = {{"rank", r}};
    for (std::size_t i = 0; i < figures.size(); ++i) one[figures[i].first] = values[r * mine.numel() + static_cast<int64_t>(i)];
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace

static RunSummary train_and_report(const RunPlan& plan) {
  const ResolvedConfig& cfg = *plan.config;
  const Options& train = cfg.table("train");
  const Options& data = cfg.table("data");
  const Options& parallel = cfg.table("parallel");
  const Options& checkpoint = cfg.table("checkpoint");
  const Options& debug = cfg.table("debug");
  Logger& log = core_log();
  namespace fs = std::filesystem;
  const fs::path out(plan.out_dir);

  World& world = *plan.world;
  const bool primary = world.rank() == 0;  // writes metrics, weights and debug dumps
  Communicator* dp_group = world.group(Axis::dp);
  install_tracking_allocator();
  const double limit_mb = train.get<double>("memory_limit_mb");
  PLAIT_CHECK(limit_mb == 0.0 || train.get<std::string>("device") == "cpu",
              "train.memory_limit_mb is enforced on CPU runs only (train.device is \"cuda\")",
              "on a GPU the device's own memory is the budget: remove the key");
  set_device_memory_limit(static_cast<int64_t>(limit_mb * 1024 * 1024));
  if (const int64_t threads = train.get<int64_t>("threads"); threads > 0) {
    at::set_num_threads(static_cast<int>(threads));
  } else if (plan.bound_cores > 0) {
    at::set_num_threads(plan.bound_cores);
  } else if (plan.local_world_size > 1) {  // share the machine's cores among its ranks
    at::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / plan.local_world_size));
  }
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  const auto seed = static_cast<uint64_t>(train.get<int64_t>("seed"));
  at::manual_seed(seed);

  const Precision precision = precision_from(train.get<std::string>("dtype"));
  const at::Device device = train.get<std::string>("device") == "cuda"
                                ? at::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(plan.local_rank))
                                : at::Device(c10::kCPU);
  const InitSpec init{seed, at::TensorOptions().dtype(precision.param_dtype).device(device)};
  // 1. The model, through the layer factory: the tensor plugin's (sharded layers), or dense.
  const std::string tensor_name = parallel.get<std::string>("tensor");
  Communicator* tp_group = world.group(Axis::tp);
  StepMetrics step_metrics;
  PluginInstance<TensorParallel> tensor;
  std::shared_ptr<LayerFactory> factory;
  if (tensor_name == "none") {
    factory = make_dense_layer_factory();
  } else {
    tensor = make_plugin<TensorParallel>(plan, tensor_name, step_metrics);
    factory = tensor.plugin->layer_factory({&tensor.context, tp_group});
  }
  // 2. The pipeline keeps this rank's stages, cut on the model's shapes (the meta device)
  //    so that each rank materialises only the units it runs; parameters tied across
  //    stages are mirrored.
  const Mesh& mesh = world.mesh();
  const int64_t pp = mesh.shape().pp, pp_rank = mesh.coords().pp;
  Communicator* pp_group = world.group(Axis::pp);
  const int64_t accum = train.get<int64_t>("grad_accum");
  const SchedulePlan& schedule_plan = plan.pipeline->schedule;
  const StagePartition& partition = plan.pipeline->partition;
  const std::vector<bool> materialised = units_to_materialise(plan.pipeline->shapes, partition, pp, pp_rank);
  StageModel whole = build_model(plan.model, *factory, init, [&](std::size_t unit) { return materialised[unit]; });
  std::map<std::string, TensorSplit> splits;  // to reassemble whole tensors from tp slices
  for (const auto& p : whole.parameters()) splits[p.name] = p.split;
  RankStages stages = rank_stages(whole, partition, pp, pp_rank);
  TiedParameters tied(whole, partition, pp, pp_rank, pp_group);
  whole = StageModel{};  // other stages' units (shapes only) are dropped here
  StageModel& model = stages.model;
  // Every stage's whole tensors on pipeline rank 0, for the first dp and tp rank's writes.
  auto gather_stages = [&](NamedTensors local) {
    if (mesh.coords().dp != 0 || mesh.coords().tp != 0) return local;
    return gather_pipeline_stages(std::move(local), pp_group);
  };
  if (checkpoint.get<bool>("save_init")) {
    NamedTensors weights = gather_stages(gather_tensor_parallel(model_weights(model), splits, tp_group));
    if (primary) save_safetensors((out / "init.safetensors").string(), weights);
  }
  tied.unlink_borrowed(model);
  apply_activation_checkpointing(model, train.get<std::string>("activation_checkpointing"));

  // 3. Data parallel wraps the stage and owns the optimizer (with the offload plugin's
  //    placement of model state, when there is one).
  const std::string offload_name = parallel.get<std::string>("offload");
  PluginInstance<Offload> offload;
  if (offload_name != "none") {
    offload = make_plugin<Offload>(plan, offload_name, step_metrics);
    offload.plugin->configure(offload.context);
  }
  auto dp = make_plugin<DataParallel>(plan, parallel.get<std::string>("data"), step_metrics);
  AdamWConfig adamw{train.get<double>("beta1"), train.get<double>("beta2"), train.get<double>("eps"),
                    train.get<double>("weight_decay")};
  dp.plugin->setup({&dp.context, &model, adamw, dp_group, world.group_maker(Axis::dp), precision.autocast_bf16,
                    offload.plugin.get(), tp_group, pp_group});
  tied.attach(model);
  PipelineExecutor executor({&model, stages.units_of, schedule_plan.spec, schedule_plan.ranks[static_cast<std::size_t>(pp_rank)],
                             pp_group, dp.plugin.get(), factory.get(), &tied, precision, device, precision.param_dtype,
                             plan.model.n_embd, seed});
  world.stats().drain();  // setup traffic (the initial broadcast) is not a step's

  // 4. Data and the learning-rate schedule.
  auto sampler = make_sampler(data, plan.model, seed, mesh.shape().dp, mesh.coords().dp);
  const int64_t steps = train.get<int64_t>("steps");
  const int64_t seq_len = resolve_seq_len(data, plan.model);
  const LrSchedule schedule{train.get<std::string>("lr_schedule"), train.get<double>("lr"),
                            train.get<int64_t>("warmup_steps"), steps, train.get<double>("min_lr_ratio")};
  const double flops_per_token = plait::flops_per_token(plan.model, seq_len);
  const double peak_flops = train.get<double>("peak_flops");
  const double grad_clip = train.get<double>("grad_clip");
  std::unique_ptr<MetricsWriter> metrics;
  if (primary) metrics = std::make_unique<MetricsWriter>((out / "metrics.jsonl").string());

  log.info("model ", plan.model.family, " ", plan.model.size, ": ", closed_form_params(plan.model),
           " parameters; data ", data.get<std::string>("source"), ", B=", data.get<int64_t>("micro_batch_size"),
           " T=", seq_len, " grad_accum=", accum, "; strategy ", dp.context.plugin_name, "; rank ", world.rank(), " of ",
           world.size());

  // The last stage's first dp rank has the logits to dump (its tp ranks gather them,
  // the first writes them).
  const bool logits_holder = pp_rank == pp - 1 && mesh.coords().dp == 0;
  const bool logits_writer = logits_holder && mesh.coords().tp == 0;
  RunSummary summary;
  const auto run_start = Clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    reset_cpu_memory_peak();
    const auto t0 = Clock::now();
    std::vector<Batch> batches;
    int64_t local_tokens = 0;
    for (int64_t i = 0; i < accum; ++i) {
      batches.push_back(sampler->next());
      local_tokens += batches.back().targets.ne(-1).sum().item<int64_t>();
    }
    // The loss of a step is normalised by the tokens of the whole global batch.
    const auto tokens = static_cast<int64_t>(group_sum(dp_group, device, static_cast<double>(local_tokens), "token-count"));
    const bool dump_logits = logits_holder && step == 1 && debug.get<bool>("dump_logits");
    const bool traced = step == debug.get<int64_t>("pipeline_trace");
    const ScheduleOutcome outcome = executor.run(batches, static_cast<double>(tokens), {dump_logits, traced});
    if (dump_logits && logits_writer) {
      save_safetensors((out / "debug_logits.safetensors").string(),
                       {{"inputs", batches[0].inputs}, {"targets", batches[0].targets}, {"logits", outcome.first_logits}});
    }
    if (traced) {
      const auto timeout = std::chrono::milliseconds(
          static_cast<int64_t>(cfg.table("distributed").get<double>("rendezvous_timeout_s") * 1000.0));
      write_measured_trace(world, outcome.timeline, schedule_plan.spec, step, timeout,
                           (out / "pipeline-trace.json").string());
    }
    // Only the last stage computes the loss: the pipeline group sums it to every stage.
    double loss = group_sum(pp_group, device, group_sum(dp_group, device, outcome.loss_sum, "loss-sum"), "loss-sum-pp");
    loss /= static_cast<double>(tokens);
    if (step == 1 && debug.get<bool>("dump_grads")) {
      // Every rank: sharded strategies gather over dp, then tp slices are joined.
      NamedTensors grads = gather_stages(gather_tensor_parallel(dp.plugin->full_gradients(), splits, tp_group));
      if (primary) save_safetensors((out / "debug_grads.safetensors").string(), grads);
    }
    const double lr = schedule.at(step);
    const StepResult result = dp.plugin->step({step, lr, grad_clip});
    tied.after_step(*dp.plugin);

    const double step_s = seconds_since(t0);
    const double tokens_per_s = static_cast<double>(tokens) / step_s;
    const MemoryStats mem = cpu_memory_stats();
    const StateBytes state = dp.plugin->state_bytes();
    nlohmann::ordered_json record = {
        {"step", step},
        {"loss", loss},
        {"lr", lr},
        {"grad_norm", result.grad_norm},
        {"tokens", tokens},
        {"step_ms", step_s * 1e3},
        {"tokens_per_s", tokens_per_s},
        {"mfu", flops_per_token * tokens_per_s / peak_flops},
        {"mem_bytes", mem.current_bytes},
        {"host_mem_bytes", mem.host_current_bytes},
    };
    // What each rank holds differs under sharding: rank 0 records its own, and every
    // rank's under "ranks".
    std::vector<std::pair<std::string, int64_t>> figures = {
        {"param_bytes", state.params},           {"grad_bytes", state.grads},
        {"optimizer_bytes", state.optimizer},    {"host_param_bytes", state.host_params},
        {"host_grad_bytes", state.host_grads},   {"host_optimizer_bytes", state.host_optimizer},
        {"peak_mem_bytes", mem.peak_bytes},      {"peak_host_mem_bytes", mem.host_peak_bytes},
        {"activation_bytes", outcome.activation_bytes},
        {"pipeline_busy_us", static_cast<int64_t>(outcome.busy_s * 1e6)},
        {"pipeline_span_us", static_cast<int64_t>(outcome.span_s * 1e6)},
    };
    for (const auto& [key, value] : figures) record[key] = value;
    add_comm_metrics(record, world.stats());
    figures.emplace_back("comm_bytes", static_cast<int64_t>(record["comm_bytes"].get<double>()));
    record["ranks"] = every_rank(world, device, figures);
    for (const auto& [key, value] : step_metrics.drain()) record[key] = value;
    if (metrics) metrics->write(record);
    summary.losses.push_back(loss);
    log.info(format_progress({step, steps, loss, lr, result.grad_norm, step_s * 1e3, tokens_per_s,
                              record["mfu"].get<double>(), mem.peak_bytes, seconds_since(run_start)}));
  }
  summary.seconds = seconds_since(run_start);
  if (checkpoint.get<bool>("save_final")) {
    NamedTensors weights = gather_stages(gather_tensor_parallel(dp.plugin->full_parameters(), splits, tp_group));
    if (primary) save_safetensors((out / "final.safetensors").string(), weights);
  }
  return summary;
}

// An allocation refused for the memory budget may surface wrapped (autograd rethrows
// it); either way the run ends with one sentence that names the rank and the strategy.
RunSummary run_training(const RunPlan& plan) {
  try {
    return train_and_report(plan);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    if (!device_memory_limit_hit()) throw;
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
    what = what.substr(0, what.find('\n'));
    const Options& parallel = plan.config->table("parallel");
    throw Error(concat("rank ", plan.world->rank(), " ran out of its device memory budget under data plugin '",
                       parallel.get<std::string>("data"), "' (offload '", parallel.get<std::string>("offload"),
                       "'): ", what),
                "shard the model state (parallel.data = \"zero\" with zero.stage = 3, or \"fsdp\"; add "
                "parallel.offload = \"cpu\"), lower data.micro_batch_size, or raise train.memory_limit_mb");
  }
}

}  // namespace plait
