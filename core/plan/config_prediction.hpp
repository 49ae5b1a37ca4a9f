#pragma once
// One config's predicted memory and step time on a machine: what `plait plan --explain`
// prints. The config is prepared as `plait run` prepares it (every check, the plugins'
// own included) at the mesh it names; each pipeline rank's parameters are built on the
// meta device. The data plugin's cost model (API 12.3) says what a rank keeps and sends;
// the core adds what it owns: activations held as the schedule keeps them in flight,
// the matrix products and memory-bound kernels, tensor and pipeline parallel's traffic,
// the schedule's idle share, the optimizer's step and the offload plugin's transfers.
#include <cstdint>
#include <string>
#include <vector>

#include "plait/sdk/data_parallel.hpp"
#include "plan/hardware.hpp"
#include "plan/plan_inputs.hpp"
#include "plan/step_time.hpp"
#include "run/prepare.hpp"

namespace plait {

// What one pipeline rank holds at its peak (the busiest of its tensor and data ranks,
// which hold alike).
struct RankMemory {
  int64_t pp_rank = 0;
  StateBytes state;           // the data plugin's, as its state_bytes() will report
  int64_t transient = 0;      // the data plugin's during a step (gathered parameters, staging)
  int64_t activations = 0;    // held from forwards to their backwards at the schedule's peak
  int64_t frozen = 0;         // the core's frozen parameters ([train] freeze, an adapter's base)
  int64_t device() const { return state.params + state.grads + state.optimizer + transient + activations + frozen; }
  int64_t host() const { return state.host_params + state.host_grads + state.host_optimizer; }
};

struct ConfigPrediction {
  std::string data_plugin, schedule, checkpointing, dtype;
  int64_t dp = 1, pp = 1, tp = 1;
  bool sequence_parallel = false;
  StepLayout layout;
  std::vector<RankMemory> ranks;  // one per pipeline rank
  std::size_t busiest = 0;        // the rank with the most device bytes
  double usable_bytes = 0;        // per accelerator (the hardware file's memory less its reserve)
  double host_bytes_per_rank = 0;  // the node's host memory shared by the ranks on it
  std::vector<CommOp> data_ops;
  StepPhases phases;
  double tokens_per_step = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;  // model FLOPs per token (flops_per_token) at the achieved rate, over the dtype's peak

  int64_t gpus() const { return dp * pp * tp; }
  bool fits() const;
  // Why it does not fit, in one sentence naming the rank and the bytes (empty: it fits).
  std::string why_not() const;
};

// Refuses a data plugin without a cost model (naming it) and a dtype the hardware file
// gives no peak for (float64).
ConfigPrediction predict_config(const PlanInputs& in, const Hardware& hw);
// A prepared run's (its rank's model built here).
ConfigPrediction predict_config(const PreparedRun& run, const Hardware& hw);

}  // namespace plait
