#include "plait/sharding/context.hpp"

namespace plait::sharding {

void make_communicators(ShardingContext& ctx, const DataParallelSetup& setup) {
  const ShardingOptions& o = ctx.options;
  Communicator* dp = setup.dp_group;
  const int dp_size = dp ? dp->size() : 1, dp_rank = dp ? dp->rank() : 0;
  const int shard_size = shard_count_of(o, dp_size);
  ctx.shard_comm = dp;
  if (dp != nullptr && shard_size < dp_size) {
    PLAIT_CHECK(setup.groups != nullptr, concat(o.plugin, ": hybrid sharding needs subgroups, and the runtime offers none"), "");
    const int replicas = dp_size / shard_size, my_shard_group = dp_rank / shard_size, my_index = dp_rank % shard_size;
    std::vector<int> members(static_cast<std::size_t>(shard_size));
    for (int i = 0; i < shard_size; ++i) members[static_cast<std::size_t>(i)] = my_shard_group * shard_size + i;
    ctx.shard_comm = setup.groups->subgroup(concat(o.plugin, ".shard.", my_shard_group), members);
    std::vector<int> replica(static_cast<std::size_t>(replicas));
    for (int r = 0; r < replicas; ++r) replica[static_cast<std::size_t>(r)] = r * shard_size + my_index;
    ctx.replica_comm = setup.groups->subgroup(concat(o.plugin, ".replica.", my_index), replica);
  }
  ctx.shard_rank = ctx.shard_comm ? ctx.shard_comm->rank() : 0;
  ctx.shard_count = ctx.shard_comm ? ctx.shard_comm->size() : 1;
}

int shard_count_of(const ShardingOptions& o, int dp) {
  const int shard_size = o.shard_size > 0 ? static_cast<int>(o.shard_size) : dp;
  PLAIT_CHECK(dp % shard_size == 0,
              concat(o.plugin, ": shard_size ", o.shard_size, " does not divide the data-parallel degree ", dp),
              "choose a shard_size that divides parallel.dp, or 0 to shard across all of it");
  return shard_size;
}

void require_offload_fits(const ShardingOptions& options, const Offload& offload) {
  if (!offload.offloads(StateRole::param)) return;
  PLAIT_CHECK(offload.offloads(StateRole::optimizer),
              concat(options.plugin, ": the offload plugin offloads parameters but not the optimizer"),
              "parameters are updated where the optimizer runs: offload both");
  PLAIT_CHECK(options.stage == 3,
              concat(options.plugin, ": parameters can be offloaded only when they are sharded (stage 3); this is stage ",
                     options.stage),
              "set the offload plugin's `params = false`, or use stage 3");
}

}  // namespace plait::sharding
