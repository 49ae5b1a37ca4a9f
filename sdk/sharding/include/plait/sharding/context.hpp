#pragma once
// What the engine's parts share on one rank: the options, the communicators, the
// dtypes, where state lives (offload), the parameters and their flat groups. Each part
// (parameter lifecycle, gradient reduction, sharded AdamW, checkpoint state) reads it
// and owns only its own in-flight work.
#include <memory>
#include <string>
#include <vector>

#include "plait/sdk/context.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/offload.hpp"
#include "plait/sharding/flat_storage.hpp"
#include "plait/sharding/options.hpp"

namespace plait::sharding {

struct ShardingContext {
  ShardingOptions options;
  AdamWConfig adamw;
  Metrics* metrics = nullptr;  // null: nothing counted

  Communicator* shard_comm = nullptr;    // reduce-scatter / all-gather within the shard group; null alone
  Communicator* replica_comm = nullptr;  // hybrid: all-reduce of shards across shard groups
  Communicator* tp = nullptr;            // tensor parallel: split parameters' norms summed over it
  Communicator* pp = nullptr;            // pipeline: every stage's squared norms summed over it
  int shard_rank = 0, shard_count = 1;

  at::ScalarType working_dtype = at::kFloat, master_dtype = at::kFloat;
  at::TensorOptions state_options;  // the master dtype on the parameters' device (there may be no group)
  Offload* offload = nullptr;
  bool offload_params = false, offload_grads = false, offload_optimizer = false;

  std::vector<ParamRef> params;
  std::vector<ParamShape> shapes;   // of params
  GroupPlan plan;
  std::vector<FlatGroup> groups;    // plan.groups, with their storage
  // Per group: the copy of its updated master into the working parameters, which the
  // host must see finished before it writes the master again.
  std::vector<std::unique_ptr<CopyInFlight>> uploads;
  MicrobatchInfo microbatch;        // the one running, for tags

  OpTag tag(const char* phase, const std::string& unit) const { return {options.plugin, phase, unit, microbatch.index}; }

  // Runs `work` where the offload plugin wants host work run, or here.
  template <class F>
  void on_host_if(bool host, F&& work) {
    if (host) {
      offload->run_on_host(work);
    } else {
      work();
    }
  }
};

// The communicators of `options` over the setup's dp group: the whole group shards, or
// (hybrid, shard_size < dp) a shard group within and a replica group across.
void make_communicators(ShardingContext& ctx, const DataParallelSetup& setup);

// Ranks each group is sharded over: options.shard_size, or all `dp` of them when it is 0;
// refuses a shard_size that does not divide dp.
int shard_count_of(const ShardingOptions& options, int dp);

// Parameters live where the optimizer updates them, and only sharded ones can move.
void require_offload_fits(const ShardingOptions& options, const Offload& offload);

}  // namespace plait::sharding
