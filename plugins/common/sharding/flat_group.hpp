#pragma once
// One group of parameters flattened into a buffer padded to a multiple of the shard
// count, and everything a rank keeps of it: its shard of the parameters, of the
// reduced gradient and of the optimizer state.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/model.hpp"
#include "plait/sdk/optim.hpp"

namespace plait::sharding {

// A run of the shard that belongs to one parameter: AdamW decays it or not.
struct Segment {
  int64_t offset = 0;  // within the shard
  int64_t length = 0;
  bool decay = false;
  TensorSplit split;  // the parameter's tensor-parallel split (the global norm, partial gradients)
  std::size_t member = 0;  // which of the group's parameters
  int64_t first = 0;       // the run's first element within that parameter (checkpoints)
};

struct FlatGroup {
  std::string name;                  // for tags and logs: "h.3", "wte+head"
  std::vector<std::size_t> params;   // indices into the engine's parameter list
  std::vector<int64_t> offsets;      // each parameter's first element in the flat buffer
  int first_unit = 0, last_unit = 0; // forward order of the units whose parameters these are
  int64_t numel = 0, padded = 0, shard = 0;
  bool sharded_params = false;       // stage 3: `full` holds memory only while gathered

  at::Tensor full;         // [padded] working dtype; the parameters are views of it
  at::Tensor param_shard;  // [shard] working dtype, stage 3: this rank's part (host if offloaded)
  at::Tensor master;       // [shard] master dtype: aliases the working shard when nothing differs
  bool master_is_alias = false;
  at::Tensor grad_full;    // stage 1: [padded]; the parameters' .grad are views of it
  at::Tensor grad_shard;   // [shard] the reduced gradient (stage 1 without offload: a view of grad_full)
  AdamWState moments;      // [shard] master dtype
  std::vector<Segment> segments;

  // Per step.
  bool gathered = false;
  std::shared_ptr<Work> gather_work;
  at::Tensor gather_input;
  std::size_t ready = 0;
  bool reduced = false;
};

// The shard of [0, padded) that rank `index` of `count` owns.
inline at::Tensor shard_of(const at::Tensor& flat, int index, int64_t shard) {
  return flat.narrow(0, static_cast<int64_t>(index) * shard, shard);
}

// Gives `tensor` storage of its full size again / takes it away, keeping the storage
// object (and so every view of it, the parameters included).
void allocate_storage(const at::Tensor& tensor);
void free_storage(const at::Tensor& tensor);

// The segments of shard `index` that belong to parameters (padding belongs to none).
std::vector<Segment> segments_of(const std::vector<int64_t>& offsets, const std::vector<int64_t>& numels,
                                 const std::vector<bool>& decay, const std::vector<TensorSplit>& splits, int index,
                                 int64_t shard);

}  // namespace plait::sharding
