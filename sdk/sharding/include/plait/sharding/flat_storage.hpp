#pragma once
// Flat storage: a planned group's parameters flattened into one buffer padded to a
// multiple of the shard count (the parameters become views of it), and everything a
// rank keeps of it: its shard of the parameters, of the reduced gradient and of the
// optimizer state.
#include <memory>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/optim.hpp"
#include "plait/sharding/group_plan.hpp"

namespace plait::sharding {

struct ShardingContext;

struct FlatGroup : PlannedGroup {
  at::Tensor full;         // [padded] working dtype; the parameters are views of it
  at::Tensor param_shard;  // [shard] working dtype, stage 3: this rank's part (host if offloaded)
  at::Tensor master;       // [shard] master dtype: aliases the working shard when nothing differs
  bool master_is_alias = false;
  at::Tensor grad_full;    // stage 1: [padded]; the parameters' .grad are views of it
  at::Tensor grad_shard;   // [shard] the reduced gradient (stage 1 without offload: a view of grad_full)
  AdamWState moments;      // [shard] master dtype
  std::vector<Segment> segments;  // this rank's shard, by parameter

  // Per step.
  bool gathered = false;
  std::shared_ptr<Work> gather_work;
  at::Tensor gather_input;
  std::size_t ready = 0;  // parameters whose gradient backward has produced
  bool reduced = false;
};

// The shard of [0, padded) that rank `index` owns.
inline at::Tensor shard_of(const at::Tensor& flat, int index, int64_t shard) {
  return flat.narrow(0, static_cast<int64_t>(index) * shard, shard);
}

// Gives `tensor` storage of its full size again / takes it away, keeping the storage
// object (and so every view of it, the parameters included).
void allocate_storage(const at::Tensor& tensor);
void free_storage(const at::Tensor& tensor);

// The group's buffer in the master dtype, holding the parameters' current values
// (identical on every rank once rank 0's have been broadcast into it).
FlatGroup gather_into_buffer(const PlannedGroup& planned, const ShardingContext& ctx);

// The parameters become views of the working-dtype buffer; this rank's master shard,
// gradient shard and moments are made (on the host where offloaded); a stage-3 buffer
// is then freed until its first gather.
void flatten(FlatGroup& g, ShardingContext& ctx);

// A stage-3 group's gathered parameters give their memory back.
void release(FlatGroup& g);

// What the groups keep on this rank, by kind, device and host.
StateBytes state_bytes(const ShardingContext& ctx);

}  // namespace plait::sharding
