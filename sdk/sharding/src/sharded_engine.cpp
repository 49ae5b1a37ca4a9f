#include "plait/sharding/sharded_engine.hpp"

#include "plait/sdk/run_check.hpp"
#include "plait/sharding/cost_model.hpp"
#include "plait/sharding/sharded_adamw.hpp"

namespace plait::sharding {

void ShardedEngine::check(const RunCheck& run) const {
  const ShardingOptions o = sharding_options();
  const int64_t dp = run.parallel->get<int64_t>("dp");
  PLAIT_CHECK(o.shard_size == 0 || dp % o.shard_size == 0,
              concat(options().where("shard_size"), ": ", o.plugin, ": shard_size ", o.shard_size,
                     " does not divide the data-parallel degree ", dp, " ([parallel] dp, ", run.parallel->where("dp"), ")"),
              "hybrid sharding shards within groups of shard_size ranks: choose a divisor of dp, or 0 to shard across "
              "all of them");
  if (run.offload != nullptr) {
    at_place(run.parallel->where("offload"), [&] { require_offload_fits(o, *run.offload); });
  }
}

// The context every part reads: options, dtypes, where state lives.
static void fill_context(ShardingContext& ctx, const DataParallelSetup& setup) {
  ctx.adamw = setup.adamw;
  ctx.offload = setup.offload;
  ctx.tp = setup.tp_group;
  ctx.pp = setup.pp_group;
  ctx.params = setup.model->parameters();
  // A pipeline rank whose every parameter is frozen ([train] freeze) trains none: no
  // groups, and the rank still takes its part in the step's norms.
  const std::vector<ParamRef> all = setup.model->all_parameters();
  PLAIT_CHECK(!all.empty(), concat(ctx.options.plugin, ": the model has no parameters"), "");
  const at::ScalarType dtype = (ctx.params.empty() ? all : ctx.params).front().tensor.scalar_type();
  for (const auto& p : ctx.params) {
    PLAIT_CHECK(p.tensor.scalar_type() == dtype,
                concat(ctx.options.plugin, ": parameter ", p.name, " is ", p.tensor.scalar_type(), " but others are ", dtype),
                "keep every parameter in one dtype");
  }
  ctx.shapes = param_shapes(ctx.params);
  ctx.master_dtype = dtype;
  ctx.state_options = all.front().tensor.options().dtype(dtype).requires_grad(false);
  ctx.working_dtype = setup.bf16 ? at::kBFloat16 : dtype;
  if (ctx.offload != nullptr) {
    ctx.offload_optimizer = ctx.offload->offloads(StateRole::optimizer);
    ctx.offload_grads = ctx.offload->offloads(StateRole::grad);
    ctx.offload_params = ctx.offload->offloads(StateRole::param);
    require_offload_fits(ctx.options, *ctx.offload);
  }
}

// Plan, buffers (rank 0's initial values broadcast into them), then flat storage.
void ShardedEngine::make_groups(const DataParallelSetup& setup) {
  ctx_.plan = plan_groups(unit_shapes(*setup.model, ctx_.params), ctx_.shapes, ctx_.options, ctx_.shard_count,
                          static_cast<int64_t>(c10::elementSize(ctx_.working_dtype)));
  for (const auto& planned : ctx_.plan.groups) ctx_.groups.push_back(gather_into_buffer(planned, ctx_));
  if (setup.dp_group != nullptr && ctx_.options.broadcast_init) {
    for (auto& g : ctx_.groups) {
      BroadcastOptions o;
      o.root = 0;
      o.tag = ctx_.tag("broadcast-init", g.name);
      setup.dp_group->broadcast(g.full, o)->wait();
    }
  }
  for (auto& g : ctx_.groups) flatten(g, ctx_);
  ctx_.uploads.resize(ctx_.groups.size());
}

void ShardedEngine::setup(const DataParallelSetup& setup) {
  ctx_.options = sharding_options();
  ctx_.metrics = context().metrics;
  fill_context(ctx_, setup);
  make_communicators(ctx_, setup);
  make_groups(setup);
  reduction_.start();
  if (ctx_.options.stage == 3) lifecycle_.wrap_units(*setup.model);

  int64_t psi = 0;
  for (const auto& g : ctx_.groups) psi += g.numel;
  log().info(ctx_.options.plugin, ": stage ", ctx_.options.stage, ", ", ctx_.groups.size(), " groups over ",
             ctx_.params.size(), " parameters (", psi, " elements), sharded ", ctx_.shard_count, " ways",
             ctx_.replica_comm ? concat(", replicated ", ctx_.replica_comm->size(), " ways") : std::string(), "; working ",
             ctx_.working_dtype, ", master ", ctx_.master_dtype,
             ctx_.offload ? concat("; offload: optimizer ", ctx_.offload_optimizer, " grads ", ctx_.offload_grads,
                                   " params ", ctx_.offload_params)
                          : std::string());
}

void ShardedEngine::before_microbatch(const MicrobatchInfo& mb) {
  ctx_.microbatch = mb;
  reduction_.before_microbatch(mb);
}

void ShardedEngine::after_backward(const MicrobatchInfo& mb) { reduction_.after_backward(mb); }

GradNorm ShardedEngine::grad_norm() {
  PLAIT_CHECK(reduction_.accumulated(), concat(ctx_.options.plugin, ": step() before any backward"), "");
  return sharded_grad_norm(ctx_);
}

void ShardedEngine::update(const UpdateArgs& args) {
  sharded_update(ctx_, args);
  reduction_.clear_accumulated();
}

void ShardedEngine::discard_gradients() {
  clear_gradients(ctx_);
  reduction_.clear_accumulated();
}

DataCost ShardedEngine::cost(const CostQuery& query) const { return sharded_cost(sharding_options(), query); }

std::vector<int64_t> ShardedEngine::members_per_node(const CostQuery& query, const DataCost& cost) const {
  return sharded_members_per_node(sharding_options(), query, cost);
}

StateBytes ShardedEngine::state_bytes() const {
  StateBytes bytes = sharding::state_bytes(ctx_);
  bytes.host_grads += reduction_.staging_bytes();
  return bytes;
}

}  // namespace plait::sharding
