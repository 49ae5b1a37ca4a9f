#include "plait/sharding/sharded_adamw.hpp"

namespace plait::sharding {
namespace {

void update_group(FlatGroup& g, const ShardingContext& ctx, const UpdateArgs& args) {
  at::NoGradGuard no_grad;
  at::Tensor grad = g.grad_shard.scalar_type() == ctx.master_dtype ? g.grad_shard : g.grad_shard.to(ctx.master_dtype);
  if (args.clip_coef < 1.0) grad.mul_(args.clip_coef);
  AdamWTensors all;  // each parameter's run of the shard: decay differs between them
  for (const auto& s : g.segments) {
    all.add(g.master.narrow(0, s.offset, s.length), grad.narrow(0, s.offset, s.length),
            {g.moments.exp_avg.narrow(0, s.offset, s.length), g.moments.exp_avg_sq.narrow(0, s.offset, s.length)},
            s.decay);
  }
  adamw_update_all(all, args.step, args.lr, ctx.adamw);
}

// The updated master reaches the working parameters (this rank's shard of them).
void publish_master(std::size_t k, ShardingContext& ctx, const at::Tensor& working) {
  FlatGroup& g = ctx.groups[k];
  if (g.master_is_alias) return;
  if (ctx.offload_optimizer && !ctx.offload_params) {
    // Host master to device parameters: the copy runs while the host updates the next
    // group; a working dtype other than the master's is made on the device.
    const bool same = g.master.scalar_type() == working.scalar_type();
    const at::Tensor landing = same ? working : at::empty(g.master.sizes(), g.master.options().device(working.device()));
    ctx.uploads[k] = ctx.offload->copy(landing, g.master);
    ctx.uploads[k]->before_device_use();
    if (!same) working.copy_(landing);
  } else {
    ctx.on_host_if(ctx.offload_params, [&] { working.copy_(g.master); });
  }
  if (ctx.metrics && ctx.offload_optimizer) ctx.metrics->count("offload_h2d_bytes", static_cast<double>(working.nbytes()));
}

void clear_group(FlatGroup& g, ShardingContext& ctx) {
  at::NoGradGuard no_grad;
  // Stage 1 without offload: the gradient shard is a view of the whole gradient.
  if (g.grad_full.defined()) g.grad_full.zero_();
  if (!g.grad_full.defined() || ctx.offload_grads) ctx.on_host_if(ctx.offload_grads, [&] { g.grad_shard.zero_(); });
}

}  // namespace

GradNorm sharded_grad_norm(const ShardingContext& ctx) {
  SquaredNorms local;
  for (const auto& g : ctx.groups) {
    for (const auto& s : g.segments) local.add(s.split, g.grad_shard.narrow(0, s.offset, s.length));
  }
  return global_grad_norm(local, ctx.shard_comm, ctx.tp, ctx.pp, ctx.state_options, ctx.options.plugin);
}

void sharded_update(ShardingContext& ctx, const UpdateArgs& args) {
  std::vector<std::shared_ptr<Work>> gathers;
  std::vector<at::Tensor> inputs;
  for (std::size_t k = 0; k < ctx.groups.size(); ++k) {
    FlatGroup& g = ctx.groups[k];
    if (auto& last = ctx.uploads[k]) last->before_host_use();  // the host is about to write its source
    ctx.on_host_if(ctx.offload_optimizer, [&] { update_group(g, ctx, args); });
    at::NoGradGuard no_grad;
    const at::Tensor working = g.sharded_params ? g.param_shard : shard_of(g.full, ctx.shard_rank, g.shard);
    publish_master(k, ctx, working);
    if (!g.sharded_params && ctx.shard_comm != nullptr) {
      // Whole parameters on every rank: gather the updated shards (while the next group updates).
      inputs.push_back(working.clone());
      CommOptions o;
      o.tag = ctx.tag("param-gather", g.name);
      gathers.push_back(ctx.shard_comm->all_gather(g.full, inputs.back(), o));
    }
    clear_group(g, ctx);
  }
  for (auto& w : gathers) w->wait();
}

void clear_gradients(ShardingContext& ctx) {
  for (auto& g : ctx.groups) clear_group(g, ctx);
}

}  // namespace plait::sharding
