#pragma once
// One optimizer step's time on a machine, by phase: the busiest rank's matrix products
// and memory-bound kernels, tensor parallel's collectives between them, the sends between
// pipeline stages, the schedule's idle share, the data plugin's collectives that the
// backward does not hide, and the optimizer's step. Ranks are placed tensor parallel
// first (within a node), then data parallel, then pipeline stages, as Megatron-LM and
// plait's mesh place them.
#include <cstdint>
#include <string>
#include <vector>

#include "plan/collective_time.hpp"
#include "plan/layer_kernels.hpp"
#include "plan/rank_shape.hpp"

namespace plait {

struct StepLayout {
  RankShape rank;  // one rank's microbatch: tp, sequence parallel, checkpointing, activation dtype
  int64_t dp = 1, pp = 1;
  int64_t virtual_stages = 1;  // per pipeline rank
  int64_t microbatches = 1;    // per pipeline per optimizer step
  double idle_share = 0;       // the schedule's own (its ScheduleModel), 0 without a pipeline
  int64_t grad_bytes_per_element = 4;  // the tied embedding's gradient, summed between the end stages
  // The blocks on each pipeline rank, its virtual stages' together, as the stage cut made
  // them ([parallel] stage_blocks, or balanced); empty: n_layer / pp on each, which must divide.
  std::vector<int64_t> rank_blocks;
  int64_t gpus() const { return dp * pp * rank.tp; }
  int64_t blocks_on(int64_t pp_rank) const;
  int64_t global_batch() const { return dp * microbatches * rank.micro_batch; }
};

// A collective the data plugin issues per step (its cost model's).
struct CommOp {
  std::string what;  // "gradient all-reduce"
  Collective op = Collective::all_reduce;
  double bytes = 0;  // the full buffer (collective_time.hpp)
  int64_t count = 1;
  bool overlaps_backward = false;  // issued while a backward runs (once a step: the last microbatch's)
  bool overlaps_forward = false;   // issued while a forward runs (prefetched gathers)
  GroupPlacement group{0, 0};      // a subgroup's ranks and members on a node; size 0: the data group
};

struct StepPhases {
  double compute = 0;       // the busiest rank's matrix products
  double memory_bound = 0;  // its memory-bound kernels
  double tp_comm = 0;       // tensor parallel's collectives (the products wait for them)
  double pp_comm = 0;       // sends between pipeline stages
  double bubble = 0;        // the schedule's idle share of the step
  // The data plugin's collectives where the computation does not hide them: beside it
  // (the machine's 1 - comm_overlap of the time they run under a pass, taken from its
  // cores or SMs: a run measures it as slower forward and backward), and exposed (after
  // the pass's end, or issued outside one: a run measures it as waiting).
  double dp_comm_beside = 0;
  double dp_comm = 0;
  double optimizer = 0;     // the optimizer's step over the rank's state
  double offload = 0;       // host transfers and the host's optimizer step (an offload plugin's)
  double core_comm = 0;     // the core's own collective each step (the loss's sum over the world)
  double total() const {
    return compute + memory_bound + tp_comm + pp_comm + bubble + dp_comm_beside + dp_comm + optimizer + offload +
           core_comm;
  }
};

// Where the layout's groups fall on the machine's nodes.
GroupPlacement tensor_group(const Hardware& hw, const StepLayout& layout);
GroupPlacement data_group(const Hardware& hw, const StepLayout& layout);
// Whether neighbouring pipeline stages share a node.
bool stages_share_node(const Hardware& hw, const StepLayout& layout);

// The optimizer's step on a rank: the bytes it reads and writes (at the memory's
// bandwidth), and the state it goes through (at the hardware's measured AdamW rate,
// where the file has one).
struct OptimizerBytes {
  double moved = 0;
  double state = 0;
};

// `data_ops` in the order the plugin issues them (its cost model lists them so).
StepPhases predict_step_time(const Hardware& hw, const StepLayout& layout, const KernelInventory& kernels,
                             const std::vector<CommOp>& data_ops, const OptimizerBytes& optimizer);

}  // namespace plait
