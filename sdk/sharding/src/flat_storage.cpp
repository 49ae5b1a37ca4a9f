#include "plait/sharding/flat_storage.hpp"

#include <c10/core/DeviceGuard.h>

#include "plait/sharding/context.hpp"

namespace plait::sharding {

void allocate_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  const auto nbytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  if (storage->nbytes() == nbytes) return;
  // The CUDA caching allocator allocates on the current device: make it the tensor's.
  const c10::DeviceGuard on_its_device(tensor.device());
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

void free_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
}

FlatGroup gather_into_buffer(const PlannedGroup& planned, const ShardingContext& ctx) {
  at::NoGradGuard no_grad;
  FlatGroup g;
  static_cast<PlannedGroup&>(g) = planned;
  std::vector<at::Tensor> pieces;
  for (std::size_t i : g.params) pieces.push_back(ctx.params[i].tensor.detach().reshape({-1}));
  g.full = at::zeros({g.padded}, ctx.params.front().tensor.options().dtype(ctx.master_dtype).requires_grad(false));
  g.full.narrow(0, 0, g.numel).copy_(at::cat(pieces));
  return g;
}

namespace {

// This rank's master shard and moments, where the optimizer runs.
void make_optimizer_state(FlatGroup& g, ShardingContext& ctx, const at::Tensor& master_full, const at::Tensor& working_shard) {
  g.master_is_alias = !ctx.offload_optimizer && ctx.working_dtype == ctx.master_dtype;
  ctx.on_host_if(ctx.offload_optimizer, [&] {
    const at::Tensor master_shard = shard_of(master_full, ctx.shard_rank, g.shard);
    if (g.master_is_alias) {
      g.master = working_shard;
    } else {
      g.master = ctx.offload_optimizer ? ctx.offload->to_host(master_shard) : master_shard.clone();
    }
    g.moments = adamw_state_like(g.master);
  });
}

// Stage 1 accumulates whole gradients (the parameters' .grad are views of one buffer);
// the reduced shard lives on the host when offloaded.
void make_gradient_buffers(FlatGroup& g, ShardingContext& ctx) {
  const auto grad_options = g.full.options();
  if (ctx.options.stage == 1) {
    g.grad_full = at::zeros({g.padded}, grad_options);
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      at::Tensor& p = ctx.params[g.params[k]].tensor;
      p.mutable_grad() = g.grad_full.narrow(0, g.offsets[k], p.numel()).view(p.sizes());
    }
  }
  if (ctx.offload_grads) {
    ctx.on_host_if(true, [&] { g.grad_shard = ctx.offload->to_host(at::zeros({g.shard}, grad_options.dtype(ctx.master_dtype))); });
  } else if (ctx.options.stage == 1) {
    g.grad_shard = shard_of(g.grad_full, ctx.shard_rank, g.shard);
  } else {
    g.grad_shard = at::zeros({g.shard}, grad_options);
  }
}

}  // namespace

void flatten(FlatGroup& g, ShardingContext& ctx) {
  at::NoGradGuard no_grad;
  const at::Tensor master_full = g.full;  // master dtype, whole, identical on every rank
  g.segments = segments_of(g, ctx.shapes, ctx.shard_rank);
  g.full = ctx.working_dtype == ctx.master_dtype ? master_full : master_full.to(ctx.working_dtype);
  for (std::size_t k = 0; k < g.params.size(); ++k) {
    at::Tensor& p = ctx.params[g.params[k]].tensor;
    p.set_data(g.full.narrow(0, g.offsets[k], p.numel()).view(p.sizes()));
  }
  at::Tensor working_shard = shard_of(g.full, ctx.shard_rank, g.shard);
  if (g.sharded_params) {
    ctx.on_host_if(ctx.offload_params, [&] {
      g.param_shard = ctx.offload_params ? ctx.offload->to_host(working_shard) : working_shard.clone();
    });
    working_shard = g.param_shard;
  }
  make_optimizer_state(g, ctx, master_full, working_shard);
  make_gradient_buffers(g, ctx);
  if (g.sharded_params) {
    free_storage(g.full);
  } else {
    g.gathered = true;
  }
}

void release(FlatGroup& g) {
  if (!g.sharded_params || !g.gathered) return;
  free_storage(g.full);
  g.gathered = false;
}

StateBytes state_bytes(const ShardingContext& ctx) {
  StateBytes b;
  for (const auto& g : ctx.groups) {
    if (g.sharded_params) {
      (ctx.offload_params ? b.host_params : b.params) += static_cast<int64_t>(g.param_shard.nbytes());
    } else {
      b.params += static_cast<int64_t>(g.full.nbytes());
    }
    if (g.grad_full.defined()) b.grads += static_cast<int64_t>(g.grad_full.nbytes());
    if (!g.grad_full.defined() || ctx.offload_grads) {
      (ctx.offload_grads ? b.host_grads : b.grads) += static_cast<int64_t>(g.grad_shard.nbytes());
    }
    int64_t optimizer = static_cast<int64_t>(g.moments.exp_avg.nbytes() + g.moments.exp_avg_sq.nbytes());
    if (!g.master_is_alias) optimizer += static_cast<int64_t>(g.master.nbytes());
    (ctx.offload_optimizer ? b.host_optimizer : b.optimizer) += optimizer;
  }
  return b;
}

}  // namespace plait::sharding
