#pragma once
// API 12.3, an extension (plugin.hpp): what a data-parallel plugin keeps on a rank and
// sends per step, for `plait plan`. The planner asks before any rank runs, for a mesh it
// may never start: the query lists one rank's parameters and units as that rank's model
// would (the core builds it on the meta device, tensor plugin and pipeline stage
// applied), and the plugin answers with its own arithmetic: its padding, its buckets,
// its groups. A data plugin without it (built for 12.2 or before) loads and runs as
// before; the planner lists it as "no cost model" and can only measure it.
//
//   class MyStrategy : public plait::DataParallel, public plait::DataCostModel {
//     plait::DataCost cost(const plait::CostQuery& q) const override { ... }
//     void* find_extension(std::string_view id) override { return plait::offer<plait::DataCostModel>(this, id); }
//   };
//
// The promise a cost model keeps (a test holds the built-in plugins to it, and
// `plait plan --explain --measure` checks any plugin): for the query of a rank, `state`
// equals what state_bytes() reports on that rank between steps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// One of the rank's parameters, as StageModel::parameters() lists them.
struct CostParameter {
  std::string name;
  int64_t elements = 0;  // on this rank: its tensor-parallel slice
  bool decay = false;
  TensorSplit split;
};

// One of the rank's units, as StageModel lists them.
struct CostUnit {
  std::string prefix;                 // "transformer.h.3."
  std::vector<std::size_t> params;    // indices into the parameters it owns
  std::vector<std::string> borrowed;  // parameters of other units it reads (a tied head's embedding)
};

struct PLAIT_ABI_GROWS CostQuery {
  const std::vector<CostParameter>* params = nullptr;
  const std::vector<CostUnit>* units = nullptr;
  int64_t dp = 1;               // ranks in the data-parallel group
  int64_t dp_per_node = 1;      // of them on one node
  int64_t param_bytes = 4;      // bytes per element of the parameters as the model holds them
  bool bf16 = false;            // train.dtype = bfloat16: bf16 compute, master weights in param_bytes
  int64_t microbatches = 1;     // backward passes per optimizer step on this rank
  // What the configured offload plugin keeps in host memory (Offload::offloads).
  bool offload_params = false, offload_grads = false, offload_optimizer = false;
};

enum class CostCollective : int32_t { all_reduce, all_gather, reduce_scatter, broadcast };
enum class CostOverlap : int32_t { none, forward, backward };

// Collectives the plugin issues per optimizer step, alike ones counted together.
struct CommCost {
  std::string what;  // "gradient bucket", "gather h.3"
  CostCollective op = CostCollective::all_reduce;
  int64_t bytes = 0;  // the full buffer: an all-reduce's tensor, an all-gather's output, a reduce-scatter's input
  int64_t count = 1;  // per optimizer step
  CostOverlap overlaps = CostOverlap::none;  // what it may run under
  int64_t group = 0;  // ranks in its group; 0: the whole data-parallel group
};

struct DataCost {
  StateBytes state;              // what state_bytes() reports between steps
  int64_t transient_bytes = 0;   // held only during a step at its peak (gathered parameters, staging)
  std::vector<CommCost> comm;  // in the order the plugin issues them (the planner's stream follows it)
};

// Parameters, gradients and AdamW's two moments, each whole in the parameters' dtype: what
// a replicated strategy keeps (ReplicatedAdamW's state, replicated_adamw.hpp).
inline StateBytes replicated_state(const CostQuery& q) {
  StateBytes b;
  for (const CostParameter& p : *q.params) b.params += p.elements * q.param_bytes;
  b.grads = b.params;
  b.optimizer = 2 * b.params;
  return b;
}

class PLAIT_SDK_VISIBLE DataCostModel {
 public:
  static constexpr const char* kExtension = "plait.data_cost_model/1";
  virtual ~DataCostModel() = default;
  virtual DataCost cost(const CostQuery& query) const = 0;
};

// API 12.5, an extension beside DataCostModel: where the members of each collective's
// group lie. The planner prices a collective by its group's members on one node: within
// a node it takes the node's links; across nodes, one ring per member on a node, each
// through its own NIC. Without this extension, a group smaller than the data-parallel
// group is taken as spread evenly over that group's nodes, as a hybrid plugin's
// replicas are (one from each shard group); a plugin whose groups are consecutive ranks,
// as hybrid shard groups are (within a node when they fit), says so here.
//
//   std::vector<int64_t> members_per_node(const plait::CostQuery& q, const plait::DataCost& c) const override;
//   void* find_extension(std::string_view id) override {
//     return plait::offer<plait::DataCostModel, plait::DataCostPlacement>(this, id);
//   }
class PLAIT_SDK_VISIBLE DataCostPlacement {
 public:
  static constexpr const char* kExtension = "plait.data_cost_placement/1";
  virtual ~DataCostPlacement() = default;
  // For each of `cost.comm` (this plugin's answer to `query`), in order: how many members
  // of its group share one node, with `query.dp_per_node` of the data-parallel group on
  // each (at least 1, at most the group's size).
  virtual std::vector<int64_t> members_per_node(const CostQuery& query, const DataCost& cost) const = 0;
};

}  // namespace plait
