#pragma once
// The sharded data-parallel engine behind the zero and fsdp plugins (ZeRO, Rajbhandari
// et al. 2020; PyTorch FSDP). Per step, on every rank:
//   stage 1  gradients accumulate whole; at the last microbatch each group's gradient is
//            reduce-scattered as soon as backward has produced it; each rank updates its
//            shard; the updated shards are all-gathered into the whole parameters.
//   stage 2  as 1, but every microbatch's gradient is reduce-scattered into the owner's
//            shard and the whole gradient is released at once.
//   stage 3  as 2, and parameters are kept as shards: a group is all-gathered just
//            before its first unit runs forward (the next groups' gathers prefetched),
//            freed after its last unit's forward, gathered again when backward reaches
//            it, and freed once its gradient is reduced. No gather after the update.
// Hybrid sharding shards within groups of shard_size ranks and all-reduces the reduced
// shards across those groups. The optimizer math is the SDK's AdamW on each shard,
// so every stage trains the model the single process trains.
#include <deque>
#include <memory>
#include <vector>

#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/grad_hooks.hpp"
#include "plait/sdk/offload.hpp"
#include "sharding/flat_group.hpp"
#include "sharding/sharding_plan.hpp"

namespace plait::sharding {

class ShardedEngine : public DataParallel {
 public:
  // What the plan and the offload plugin allow, refused before launch (the same rules as setup's).
  void check(const RunCheck& run) const override;
  void setup(const DataParallelSetup& setup) override;
  void before_microbatch(const MicrobatchInfo& mb) override;
  void after_backward(const MicrobatchInfo& mb) override;
  NamedTensors full_gradients() override;
  NamedTensors full_parameters() override;
  StateBytes state_bytes() const override;
  std::vector<StatePart> state_parts() override;  // sharded_state.cpp
  void load_state(StateSource& source) override;

  // Called by the unit wrappers (stage 3).
  void before_forward(int unit);
  void after_forward(int unit, at::Tensor& output);
  void before_backward(int unit);

 protected:
  // The plugin turns its options into a plan; called first thing in setup().
  virtual ShardingPlan make_plan(const Options& options) const = 0;
  GradNorm grad_norm() override;
  void update(const UpdateArgs& args) override;
  void discard_gradients() override;

 private:
  struct PendingReduce {
    std::size_t group = 0;
    std::shared_ptr<Work> work;
    at::Tensor input, output;
  };
  // A reduced gradient shard on its way to host memory; with `staging`, it still has to
  // be added to the shard there (later microbatches of stages 2 and 3).
  struct GradDownload {
    std::size_t group = 0;
    std::unique_ptr<CopyInFlight> copy;
    at::Tensor staging;
  };

  void make_communicators(const DataParallelSetup& setup);
  void make_groups(const StageModel& model);
  void flatten(FlatGroup& g);
  void wrap_units(StageModel& model);
  void gather(std::size_t group);  // starts the all-gather of a stage-3 group (no wait)
  void ensure_gathered(std::size_t group);
  void release(std::size_t group);
  void on_grad_ready(std::size_t param);
  void reduce(std::size_t group);
  void finish_reductions();
  void finish_oldest_reduction();
  void download_grad_shard(std::size_t group, const at::Tensor& reduced);
  void finish_grad_downloads();
  void update_group(FlatGroup& g, const UpdateArgs& args);
  void publish_loaded_master(FlatGroup& g);
  void clear_gradients(FlatGroup& g);
  at::Tensor gather_shards(const at::Tensor& shard, const FlatGroup& g, const char* phase);
  // Every parameter's whole value of one kind of shard (gradient, master), by name.
  NamedTensors gather_named(at::Tensor FlatGroup::*shard, const char* phase);
  OpTag tag(const char* phase, const std::string& unit) const;
  template <class F>
  void on_host_if(bool host, F&& work) {
    if (host) {
      offload_->run_on_host(work);
    } else {
      work();
    }
  }

  ShardingPlan plan_;
  AdamWConfig adamw_;
  Offload* offload_ = nullptr;
  Communicator* shard_comm_ = nullptr;    // reduce-scatter / all-gather within the shard group
  Communicator* replica_comm_ = nullptr;  // hybrid: all-reduce of shards across shard groups
  Communicator* tp_ = nullptr;            // tensor parallel: split parameters' norms summed over it
  Communicator* pp_ = nullptr;            // pipeline: every stage's squared norms summed over it
  int shard_rank_ = 0, shard_count_ = 1;
  at::ScalarType working_dtype_ = at::kFloat, master_dtype_ = at::kFloat;
  bool offload_params_ = false, offload_grads_ = false, offload_optimizer_ = false;

  std::vector<ParamRef> params_;
  std::vector<std::size_t> group_of_param_;
  std::vector<long> group_of_unit_;  // -1: the unit has nothing sharded to gather
  std::vector<FlatGroup> groups_;  // in forward order of their first unit
  // Views of this rank's shards of the partial gradients (TensorSplit::partial_grad), in
  // group order: every tp rank shards alike, so the lists match.
  std::vector<at::Tensor> partial_grad_shards_;
  std::deque<PendingReduce> pending_;
  std::vector<GradDownload> downloads_;  // within one backward
  std::vector<at::Tensor> grad_staging_;  // per group, allocated at its first use
  // Per group: the copy of its updated master into the working parameters, which the
  // host must see finished before it updates the master again.
  std::vector<std::unique_ptr<CopyInFlight>> uploads_;
  GradReadyHooks hooks_;
  MicrobatchInfo microbatch_;
  bool reduce_now_ = false;
  bool accumulated_ = false;  // a reduced gradient is in the shards this step
};

}  // namespace plait::sharding
