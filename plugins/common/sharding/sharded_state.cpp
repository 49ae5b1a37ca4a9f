// The sharded engine's checkpoint state: each rank's runs of the master shard and of
// AdamW's moments, as parts of the parameters they belong to. Under hybrid sharding the
// shard groups hold the same shards, so each replica writes a share of them.
#include "sharding/sharded_engine.hpp"

namespace plait::sharding {

std::vector<StatePart> ShardedEngine::state_parts() {
  const int replicas = replica_comm_ ? replica_comm_->size() : 1, replica = replica_comm_ ? replica_comm_->rank() : 0;
  std::vector<StatePart> out;
  for (const auto& g : groups_) {
    if (const auto& last = uploads_[static_cast<std::size_t>(&g - groups_.data())]) last->before_host_use();
    for (const auto& s : g.segments) {
      const std::string& name = params_[g.params[s.member]].name;
      out.push_back({name, state_kind::param, s.first, g.master.narrow(0, s.offset, s.length), replicas, replica});
      out.push_back({name, state_kind::exp_avg, s.first, g.moments.exp_avg.narrow(0, s.offset, s.length), replicas, replica});
      out.push_back({name, state_kind::exp_avg_sq, s.first, g.moments.exp_avg_sq.narrow(0, s.offset, s.length), replicas,
                     replica});
    }
  }
  return out;
}

// The loaded master reaches the working parameters as an update's would: this rank's
// working shard, then (parameters kept whole) every rank's shard gathered.
void ShardedEngine::publish_loaded_master(FlatGroup& g) {
  at::NoGradGuard no_grad;
  at::Tensor working = g.sharded_params ? g.param_shard : shard_of(g.full, shard_rank_, g.shard);
  if (!g.master_is_alias) on_host_if(offload_params_, [&] { working.copy_(g.master); });
  if (!g.sharded_params && shard_comm_ != nullptr) {
    CommOptions o;
    o.tag = tag("checkpoint-load", g.name);
    at::Tensor input = working.clone();
    shard_comm_->all_gather(g.full, input, o)->wait();
  }
}

void ShardedEngine::load_state(StateSource& source) {
  for (std::size_t k = 0; k < groups_.size(); ++k) {
    FlatGroup& g = groups_[k];
    if (const auto& last = uploads_[k]) last->before_host_use();
    on_host_if(offload_optimizer_, [&] {
      for (const auto& s : g.segments) {
        const std::string& name = params_[g.params[s.member]].name;
        source.read_into(g.master.narrow(0, s.offset, s.length), name, state_kind::param, s.first);
        source.read_into(g.moments.exp_avg.narrow(0, s.offset, s.length), name, state_kind::exp_avg, s.first);
        source.read_into(g.moments.exp_avg_sq.narrow(0, s.offset, s.length), name, state_kind::exp_avg_sq, s.first);
      }
    });
    publish_loaded_master(g);
  }
}

}  // namespace plait::sharding
