#pragma once
// The sharded data-parallel engine (ZeRO, Rajbhandari et al. 2020; PyTorch FSDP) as a
// DataParallel plugin to derive from: implement sharding_options() and the engine does
// the rest. Per step, on every rank:
//   stage 1  gradients accumulate whole; at the last microbatch each group's gradient is
//            reduce-scattered as soon as backward has produced it; each rank updates its
//            shard; the updated shards are all-gathered into the whole parameters.
//   stage 2  as 1, but every microbatch's gradient is reduce-scattered into the owner's
//            shard and the whole gradient is released at once.
//   stage 3  as 2, and parameters are kept as shards (param_lifecycle.hpp).
// Hybrid sharding shards within groups of shard_size ranks and all-reduces the reduced
// shards across those groups. The optimizer math is the SDK's AdamW on each shard, so
// every stage trains the model the single process trains.
//
// The parts, each readable alone: group_plan.hpp (what goes where), flat_storage.hpp
// (the buffers), param_lifecycle.hpp (stage 3's gathers), grad_reduction.hpp (the
// reduction pipeline), sharded_adamw.hpp (the step); checkpoint_state.cpp (the state a
// checkpoint holds).
#include "plait/sdk/cost_model.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sharding/context.hpp"
#include "plait/sharding/grad_reduction.hpp"
#include "plait/sharding/param_lifecycle.hpp"

namespace plait::sharding {

class ShardedEngine : public DataParallel, public DataCostModel, public DataCostPlacement {
 public:
  // The planner's question (API 12.3), answered from the same plan and buffers as setup's.
  DataCost cost(const CostQuery& query) const override;
  // Where its groups lie (API 12.5): shard groups consecutive, replicas strided.
  std::vector<int64_t> members_per_node(const CostQuery& query, const DataCost& cost) const override;
  void* find_extension(std::string_view id) override { return offer<DataCostModel, DataCostPlacement>(this, id); }
  // What the options and the offload plugin allow, refused before launch (the same rules as setup's).
  void check(const RunCheck& run) const override;
  void setup(const DataParallelSetup& setup) override;
  void before_microbatch(const MicrobatchInfo& mb) override;
  void after_backward(const MicrobatchInfo& mb) override;
  NamedTensors full_gradients() override;
  NamedTensors full_parameters() override;
  StateBytes state_bytes() const override;
  std::vector<StatePart> state_parts() override;
  void load_state(StateSource& source) override;

  // The plan this rank runs (after setup).
  const GroupPlan& plan() const { return ctx_.plan; }

 protected:
  // The plugin turns its options (options()) into the engine's; called by check() and
  // first thing in setup().
  virtual ShardingOptions sharding_options() const = 0;
  GradNorm grad_norm() override;
  void update(const UpdateArgs& args) override;
  void discard_gradients() override;

 private:
  void make_groups(const DataParallelSetup& setup);
  void publish_loaded_master(FlatGroup& g);
  // Every parameter's whole value of one kind of shard (gradient, master), by name.
  NamedTensors gather_named(at::Tensor FlatGroup::*shard, const char* phase);

  ShardingContext ctx_;
  ParamLifecycle lifecycle_{ctx_};
  GradReduction reduction_{ctx_};
};

}  // namespace plait::sharding
