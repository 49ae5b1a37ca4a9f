#include "plan/config_prediction.hpp"

#include <algorithm>
#include <utility>

#include "data/make_sampler.hpp"
#include "plait/sdk/cost_model.hpp"
#include "plait/sdk/error.hpp"
#include "plan/activation_memory.hpp"
#include "plan/data_cost.hpp"
#include "plan/frozen_products.hpp"
#include "plan/held_in_flight.hpp"
#include "model/precision.hpp"
#include "plan/layer_kernels.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The embedding's weight split over tp: megatron's vocab-parallel embedding and loss.
bool vocab_parallel(const StageModel& whole) {
  for (const UnitSlot& slot : whole.units) {
    if (slot.kind != UnitKind::embedding) continue;
    for (const ParamRef& p : StageModel{{slot}}.all_parameters()) {  // frozen too (an adapter's base)
      if (p.split.dim >= 0) return true;
    }
  }
  return false;
}

RankShape rank_shape(const PlanInputs& in) {
  const ResolvedConfig& config = *in.config;
  RankShape q;
  q.model = in.model;
  q.seq_len = resolve_seq_len(config.table("data"), in.model);
  q.micro_batch = config.data().micro_batch_size;
  q.tp = in.mesh.tp;
  q.sequence_parallel = in.sequence_shards > 1;
  q.vocab_parallel = vocab_parallel(*in.whole);
  q.checkpointing = config.train().activation_checkpointing;
  q.packed = config.table("data").find<bool>("packing").value_or(false);
  const std::string& dtype = config.train().dtype;
  q.activation_bytes_per_element = activation_element_bytes(precision_from(dtype));
  q.stat_bytes_per_element = dtype == "float64" ? 8 : 4;
  q.weight_copy_bytes_per_element = dtype == "bfloat16" ? 2 : 0;
  q.frozen = in.frozen != nullptr ? *in.frozen : frozen_products(*in.whole, in.model.family, in.adapters);
  return q;
}

// The optimizer's step reads the parameters, gradients and moments on the device and
// writes the parameters and moments back.
double optimizer_bytes(const StateBytes& s) {
  return static_cast<double>(2 * s.params + s.grads + 2 * s.optimizer);
}

// The device's parameters, gradients and moments: what a measured AdamW rate is per.
double state_bytes(const StateBytes& s) { return static_cast<double>(s.params + s.grads + s.optimizer); }

// An offload plugin's step: what lives in host memory crosses the host link once a step
// (parameters up, gradients down; with the optimizer on the host and the parameters on
// the device, the gradients go down and the updated parameters come back up), and the
// host's AdamW goes through the state it keeps.
double offload_seconds(const Hardware& hw, const StateBytes& s) {
  if (s.host_params + s.host_grads + s.host_optimizer == 0) return 0;
  double moved = static_cast<double>(s.host_params + s.host_grads);
  if (s.host_optimizer > 0) {
    if (s.host_grads == 0) moved += static_cast<double>(s.grads);
    if (s.host_params == 0) moved += static_cast<double>(s.params);
  }
  const double step_bytes = static_cast<double>(s.host_optimizer + s.host_params + s.host_grads);
  return moved / (hw.host_link_gbps * 1e9) + (s.host_optimizer > 0 ? step_bytes / (hw.host_adam_gbps * 1e9) : 0.0);
}

// The peak the products are measured against: bf16 under autocast, else fp32's.
Hardware at_dtype_peak(const Hardware& hw, const std::string& dtype) {
  PLAIT_CHECK(dtype != "float64", "train.dtype = \"float64\": a hardware file gives bf16 and fp32 peaks only",
              "plan the run in bfloat16 or float32 (--set train.dtype=bfloat16)");
  Hardware at = hw;
  at.peak_bf16_tflops = hw.peak_tflops(dtype);
  return at;
}

// The blocks each pipeline rank runs, as the stage cut made them (a rank's virtual stages
// are s % pp == rank): [parallel] stage_blocks may give the ranks unequal shares.
std::vector<int64_t> rank_blocks(const PipelinePlan& pipeline, int64_t pp) {
  std::vector<int64_t> blocks(static_cast<std::size_t>(pp), 0);
  for (std::size_t s = 0; s < pipeline.partition.units_of.size(); ++s) {
    for (std::size_t u : pipeline.partition.units_of[s]) {
      if (pipeline.shapes.units[u].kind == UnitKind::block) ++blocks[s % static_cast<std::size_t>(pp)];
    }
  }
  return blocks;
}

StepLayout layout_of(const PlanInputs& in, const RankShape& shape) {
  const SchedulePlan& schedule = in.pipeline->schedule;
  StepLayout l;
  l.rank = shape;
  l.dp = in.mesh.dp;
  l.pp = in.mesh.pp;
  l.virtual_stages = in.mesh.pp > 1 ? schedule.spec.stages_per_rank : 1;
  l.microbatches = in.config->train().grad_accum;
  l.idle_share = in.mesh.pp > 1 ? schedule.ideal_idle_share.value_or(schedule.simulated.idle_fraction.front()) : 0.0;
  l.grad_bytes_per_element = in.config->train().dtype == "float64" ? 8 : 4;
  if (!in.pipeline->partition.units_of.empty()) l.rank_blocks = rank_blocks(*in.pipeline, in.mesh.pp);
  return l;
}

RankMemory rank_memory(const PlanInputs& in, int64_t pp_rank, int64_t dp_per_node,
                       const std::vector<int64_t>& stage_bytes, std::shared_ptr<const RankDataCost>& answer) {
  answer = in.ask_data_cost ? in.ask_data_cost(in, pp_rank, dp_per_node)
                            : std::make_shared<const RankDataCost>(plan_data_cost(in, pp_rank, dp_per_node));
  const RankDataCost& asked = *answer;
  PLAIT_CHECK(asked.cost.has_value(),
              concat("data plugin '", asked.plugin, "' has no cost model (plait::DataCostModel, plugin API 12.3)"),
              "a plugin built for 12.2 or before runs but cannot be planned; rebuild it against the current SDK and "
              "implement DataCostModel (sdk/include/plait/sdk/cost_model.hpp)");
  RankMemory m;
  m.pp_rank = pp_rank;
  m.state = asked.cost->state;
  m.transient = asked.cost->transient_bytes;
  const RankParameters& r = asked.rank;
  m.frozen = (r.frozen_elements - r.frozen_bf16_elements) *
                 static_cast<int64_t>(c10::elementSize(precision_from(in.config->train().dtype).param_dtype)) +
             r.frozen_bf16_elements * 2;
  m.activations = peak_held_bytes(in.pipeline->schedule.ranks.at(static_cast<std::size_t>(pp_rank)), stage_bytes);
  return m;
}

}  // namespace

bool ConfigPrediction::fits() const { return why_not().empty(); }

std::string ConfigPrediction::why_not() const {
  const RankMemory& r = ranks.at(busiest);
  if (static_cast<double>(r.device()) > usable_bytes) {
    return concat("pipeline rank ", r.pp_rank, " needs ", r.device() / kGiB, " GiB of the ", usable_bytes / kGiB,
                  " GiB an accelerator can hold");
  }
  for (const RankMemory& m : ranks) {
    if (static_cast<double>(m.host()) > host_bytes_per_rank) {
      return concat("pipeline rank ", m.pp_rank, " needs ", static_cast<double>(m.host()) / kGiB,
                    " GiB of host memory, of the ", host_bytes_per_rank / kGiB, " GiB its node has for each rank");
    }
  }
  return "";
}

ConfigPrediction predict_config(const PlanInputs& in, const Hardware& hw) {
  const ResolvedConfig& config = *in.config;
  ConfigPrediction p;
  p.data_plugin = config.parallel().data;
  p.schedule = in.pipeline->schedule.plugin;
  p.checkpointing = config.train().activation_checkpointing;
  p.dtype = config.train().dtype;
  p.dp = in.mesh.dp;
  p.pp = in.mesh.pp;
  p.tp = in.mesh.tp;
  const Hardware at_peak = at_dtype_peak(hw, p.dtype);
  const RankShape shape = rank_shape(in);
  p.sequence_parallel = shape.sequence_parallel;
  p.layout = layout_of(in, shape);
  const std::vector<int64_t> stage_bytes = stage_activation_bytes(*in.pipeline, predict_activation_bytes(shape));
  const GroupPlacement data = data_group(hw, p.layout);
  std::shared_ptr<const RankDataCost> busiest_cost;
  for (int64_t r = 0; r < p.pp; ++r) {
    std::shared_ptr<const RankDataCost> cost;
    p.ranks.push_back(rank_memory(in, r, data.per_node, stage_bytes, cost));
    if (r == 0 || p.ranks.back().device() > p.ranks[p.busiest].device()) {
      p.busiest = static_cast<std::size_t>(r);
      busiest_cost = std::move(cost);
    }
  }
  p.usable_bytes = hw.usable_memory_bytes();
  p.host_bytes_per_rank = hw.host_memory_gib * kGiB / static_cast<double>(std::min(p.gpus(), hw.gpus_per_node));
  p.data_ops = comm_ops(*busiest_cost, data);
  const RankMemory& busiest = p.ranks[p.busiest];
  p.phases = predict_step_time(at_peak, p.layout, plait_kernels(shape), p.data_ops,
                               {optimizer_bytes(busiest.state), state_bytes(busiest.state)});
  p.phases.offload = offload_seconds(hw, busiest.state);
  p.tokens_per_step = static_cast<double>(p.layout.global_batch() * shape.seq_len);
  p.tokens_per_s_per_gpu = p.tokens_per_step / p.phases.total() / static_cast<double>(p.gpus());
  p.mfu = flops_per_token(in.model, shape.seq_len) * p.tokens_per_s_per_gpu / (at_peak.peak_bf16_tflops * 1e12);
  return p;
}

ConfigPrediction predict_config(const PreparedRun& run, const Hardware& hw) {
  int64_t sequence_shards = 1;
  std::vector<AdapterSiteCost> adapters;
  const StageModel whole =
      build_shape_model(*run.config, *run.registry, run.model, run.mesh, &sequence_shards, &adapters);
  return predict_config(plan_inputs(run, whole, sequence_shards, &adapters), hw);
}

}  // namespace plait
