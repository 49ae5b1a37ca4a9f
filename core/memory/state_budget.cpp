#include "memory/state_budget.hpp"

#include <fstream>
#include <limits>
#include <optional>

#include <c10/core/ScalarType.h>

#include "model/model_spec.hpp"
#include "model/precision.hpp"
#include "plait/sdk/error.hpp"
#include "plan/data_cost.hpp"
#include "plan/plan_inputs.hpp"
#include "run/prepare.hpp"
#include "run/tensor_shapes_check.hpp"
#include "util/human_bytes.hpp"
#include "util/short_number.hpp"

namespace plait {
namespace {

// The frozen parameters' bytes on a rank, as the core stores them ([train] frozen_dtype).
int64_t frozen_bytes(const RankParameters& r, const ResolvedConfig& config) {
  const auto element = static_cast<int64_t>(c10::elementSize(precision_from(config.train().dtype).param_dtype));
  return (r.frozen_elements - r.frozen_bf16_elements) * element + r.frozen_bf16_elements * 2;
}

// What one rank of each pipeline stage holds before its first step, by its data plugin's
// cost model; nothing when the plugin has none (what it keeps is known only as it runs).
struct StageState {
  StateBytes state;
  int64_t frozen = 0;
  int64_t on_device() const { return state.params + state.grads + state.optimizer + frozen; }
  int64_t on_host() const { return state.host_params + state.host_grads + state.host_optimizer; }
  // "parameters 5 MiB, gradients ..., optimizer state ...[, frozen parameters ...]", what the
  // device holds, and what offload keeps in host memory too when `with_host`.
  std::string parts(bool with_host) const {
    const auto host = [&](int64_t bytes) { return with_host ? bytes : 0; };
    return concat("parameters ", human_bytes(state.params + host(state.host_params)), ", gradients ",
                  human_bytes(state.grads + host(state.host_grads)), ", optimizer state ",
                  human_bytes(state.optimizer + host(state.host_optimizer)),
                  frozen > 0 ? concat(", frozen parameters ", human_bytes(frozen)) : "");
  }
};

std::optional<std::vector<StageState>> stage_states(const PreparedRun& run) {
  const ResolvedConfig& config = *run.config;
  int64_t sequence_shards = 1;
  std::vector<AdapterSiteCost> adapters;
  const StageModel whole = build_shape_model(config, *run.registry, run.model, run.mesh, &sequence_shards, &adapters);
  const PlanInputs in = plan_inputs(run, whole, sequence_shards, &adapters);
  std::vector<StageState> out;
  for (int64_t pp_rank = 0; pp_rank < run.mesh.pp; ++pp_rank) {
    const RankDataCost asked = plan_data_cost(in, pp_rank, run.mesh.dp);
    if (!asked.cost) return std::nullopt;
    out.push_back({asked.cost->state, frozen_bytes(asked.rank, config)});
  }
  return out;
}

// The bytes this machine can still give, the smaller of the kernel's estimate and what
// this process's cgroup allows; 0 when neither can be read.
int64_t host_memory_available() {
  int64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    if (key == "MemAvailable:") available = kib * 1024;
  }
  std::ifstream max("/sys/fs/cgroup/memory.max"), current("/sys/fs/cgroup/memory.current");
  int64_t limit = 0, used = 0;
  if (max >> limit && current >> used && limit > used && (available == 0 || limit - used < available)) {
    available = limit - used;  // "max" (no limit) does not read as a number
  }
  return available;
}

}  // namespace

void check_state_fits_memory_limit(const PreparedRun& run) {
  const ResolvedConfig& config = *run.config;
  const double limit_mb = config.train().memory_limit_mb;
  if (limit_mb <= 0.0) return;
  const auto budget = static_cast<int64_t>(limit_mb * 1024 * 1024);
  const auto stages = stage_states(run);
  if (!stages) return;
  for (int64_t pp_rank = 0; pp_rank < run.mesh.pp; ++pp_rank) {
    const StageState& s = (*stages)[static_cast<std::size_t>(pp_rank)];
    const int64_t needed = s.on_device();
    if (needed <= budget) continue;
    const ParallelSettings& parallel = config.parallel();
    throw Error(
        concat(config.table("train").where("memory_limit_mb"), ": [train] memory_limit_mb = ", short_number(limit_mb),
               " is below what ", run.mesh.pp > 1 ? concat("pipeline rank ", pp_rank, "'s ranks hold") : std::string("each rank holds"),
               " before its first step: ", human_bytes(needed), " of model state under data plugin '", parallel.data,
               "' (offload '", parallel.offload, "'): ", s.parts(/*with_host=*/false)),
        concat("raise train.memory_limit_mb above ", short_number(static_cast<double>(needed) / (1024 * 1024), 4),
               " (activations need more still), or shard the model state (parallel.data = \"zero\" with zero.stage = 3, "
               "or \"fsdp\"; add parallel.offload = \"cpu\")"));
  }
}

void check_state_fits_host(const PreparedRun& run, int node_rank, int nproc) {
  const int64_t available = host_memory_available();
  if (available <= 0) return;
  const bool on_cpu = run.config->train().device == "cpu";
  if (!on_cpu && run.config->parallel().offload == "none") return;  // the state lives on the GPUs
  // Most runs fit many times over: the whole model's weights, gradients and two AdamW moments
  // in every local rank, twice over for adapters and copies, bound the state without the
  // model's meta build that the cost models need (seconds for a large model, on every launch).
  const double whole = 4.0 * 8.0 * static_cast<double>(closed_form_params(run.model));
  if (2.0 * whole * nproc <= static_cast<double>(available)) return;
  const auto stages = stage_states(run);
  if (!stages) return;
  int64_t needed = 0;
  const int64_t ranks_per_stage = static_cast<int64_t>(run.mesh.dp) * run.mesh.tp;
  for (int local = 0; local < nproc; ++local) {
    const int64_t rank = static_cast<int64_t>(node_rank) * nproc + local;
    const StageState& s = (*stages)[static_cast<std::size_t>(rank / ranks_per_stage)];
    needed += s.on_host() + (on_cpu ? s.on_device() : 0);
  }
  if (needed <= available) return;
  const Options& model = run.config->table("model");
  std::string place = model.where("size");  // the size, unless the user changed its shape
  for (const char* key : {"n_embd", "n_layer"}) {
    if (model.has(key) && !model.is_default(key)) place = model.where(key);
  }
  const StageState& first = stages->front();
  throw Error(concat(place, ": ", nproc == 1 ? "this process holds " : concat("this node's ", nproc, " ranks hold "),
                     human_bytes(needed), " of model state before the first step (",
                     nproc == 1 ? "" : stages->size() == 1 ? "each rank: " : "a rank of pipeline stage 0: ", first.parts(/*with_host=*/true),
                     "), but this machine has ", human_bytes(available),
                     " of memory free: the run would be killed for want of memory"),
              "shard the model state over more ranks (parallel.data = \"fsdp\", or \"zero\" with zero.stage = 3), "
              "choose a smaller model, or run where more memory is free");
}

}  // namespace plait
