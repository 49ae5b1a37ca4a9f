// The sharded engine's state as the rest of plait sees it: for checkpoints, each rank's
// runs of the master shard and of AdamW's moments, as parts of the parameters they
// belong to (under hybrid sharding the shard groups hold the same shards, so each
// replica writes a share of them); for checks and export, whole tensors by name.
#include "plait/sharding/sharded_engine.hpp"

namespace plait::sharding {

std::vector<StatePart> ShardedEngine::state_parts() {
  const int replicas = ctx_.replica_comm ? ctx_.replica_comm->size() : 1, replica = ctx_.replica_comm ? ctx_.replica_comm->rank() : 0;
  std::vector<StatePart> out;
  for (const auto& g : ctx_.groups) {
    if (const auto& last = ctx_.uploads[static_cast<std::size_t>(&g - ctx_.groups.data())]) last->before_host_use();
    for (const auto& s : g.segments) {
      const std::string& name = ctx_.params[g.params[s.member]].name;
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
  at::Tensor working = g.sharded_params ? g.param_shard : shard_of(g.full, ctx_.shard_rank, g.shard);
  if (!g.master_is_alias) ctx_.on_host_if(ctx_.offload_params, [&] { working.copy_(g.master); });
  if (!g.sharded_params && ctx_.shard_comm != nullptr) {
    CommOptions o;
    o.tag = ctx_.tag("checkpoint-load", g.name);
    at::Tensor input = working.clone();
    ctx_.shard_comm->all_gather(g.full, input, o)->wait();
  }
}

void ShardedEngine::load_state(StateSource& source) {
  for (std::size_t k = 0; k < ctx_.groups.size(); ++k) {
    FlatGroup& g = ctx_.groups[k];
    if (const auto& last = ctx_.uploads[k]) last->before_host_use();
    ctx_.on_host_if(ctx_.offload_optimizer, [&] {
      for (const auto& s : g.segments) {
        const std::string& name = ctx_.params[g.params[s.member]].name;
        source.read_into(g.master.narrow(0, s.offset, s.length), name, state_kind::param, s.first);
        source.read_into(g.moments.exp_avg.narrow(0, s.offset, s.length), name, state_kind::exp_avg, s.first);
        source.read_into(g.moments.exp_avg_sq.narrow(0, s.offset, s.length), name, state_kind::exp_avg_sq, s.first);
      }
    });
    publish_loaded_master(g);
  }
}

NamedTensors ShardedEngine::gather_named(at::Tensor FlatGroup::*shard, const char* phase) {
  NamedTensors out;
  for (auto& g : ctx_.groups) {
    at::Tensor mine = (g.*shard).to(g.full.device()).contiguous();
    at::Tensor whole = at::empty({g.padded}, mine.options());
    if (ctx_.shard_comm == nullptr) {
      whole.copy_(mine);
    } else {
      CommOptions o;
      o.tag = ctx_.tag(phase, g.name);
      ctx_.shard_comm->all_gather(whole, mine, o)->wait();
    }
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      const ParamRef& p = ctx_.params[g.params[k]];
      out.emplace_back(p.name, whole.narrow(0, g.offsets[k], p.tensor.numel()).view(p.tensor.sizes()).clone());
    }
  }
  return out;
}

NamedTensors ShardedEngine::full_gradients() { return gather_named(&FlatGroup::grad_shard, "debug-grad-gather"); }

NamedTensors ShardedEngine::full_parameters() { return gather_named(&FlatGroup::master, "param-export"); }

}  // namespace plait::sharding
