#pragma once
// The gradient reduction pipeline: as backward produces a group's last gradient, the
// group's gradient is reduce-scattered into its owner's shard (stage 1 only at the
// step's last microbatch, stages 2 and 3 at every one), at most two reductions in
// flight; under hybrid sharding the reduced shards are all-reduced across replicas; an
// offloaded shard travels to host memory beside the rest of backward. After the step's
// last backward, partial gradients (tensor parallel) are summed over tp.
#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "plait/sdk/grad_hooks.hpp"
#include "plait/sharding/context.hpp"

namespace plait::sharding {

class GradReduction {
 public:
  explicit GradReduction(ShardingContext& ctx) : ctx_(ctx) {}

  // After the groups are flattened: hooks on every parameter, views of the partial
  // gradients' shards.
  void start();
  void before_microbatch(const MicrobatchInfo& mb);
  void after_backward(const MicrobatchInfo& mb);

  // A reduced gradient is in the shards this step (set by the step's backward, cleared
  // by the update).
  bool accumulated() const { return accumulated_; }
  void clear_accumulated() { accumulated_ = false; }
  // Host staging for offloaded shards of later microbatches: gradient state it keeps.
  int64_t staging_bytes() const;

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

  void on_grad_ready(std::size_t param);
  void reduce(std::size_t group);
  void finish_oldest_reduction();
  void download_grad_shard(std::size_t group, const at::Tensor& reduced);
  void finish_grad_downloads();

  ShardingContext& ctx_;
  GradReadyHooks hooks_;
  // Views of this rank's shards of the partial gradients (TensorSplit::partial_grad), in
  // group order: every tp rank shards alike, so the lists match.
  std::vector<at::Tensor> partial_grad_shards_;
  std::deque<PendingReduce> pending_;
  std::vector<GradDownload> downloads_;   // within one backward
  std::vector<at::Tensor> grad_staging_;  // per group, allocated at its first use
  bool reduce_now_ = false;
  bool accumulated_ = false;
};

}  // namespace plait::sharding
