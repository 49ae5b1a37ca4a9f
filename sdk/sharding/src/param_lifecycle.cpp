#include "plait/sharding/param_lifecycle.hpp"

#include <memory>

namespace plait::sharding {
namespace {

// A unit whose forward asks the lifecycle to gather its group first.
class GatheringUnit final : public WrappingLayer {
 public:
  GatheringUnit(std::shared_ptr<Layer> inner, ParamLifecycle* lifecycle, int unit)
      : WrappingLayer(std::move(inner)), lifecycle_(lifecycle), unit_(unit) {}
  at::Tensor forward(const at::Tensor& x) override {
    lifecycle_->before_forward(unit_);
    at::Tensor y = inner_->forward(x);
    lifecycle_->after_forward(unit_, y);
    return y;
  }

 private:
  ParamLifecycle* lifecycle_;
  int unit_;
};

}  // namespace

void ParamLifecycle::wrap_units(StageModel& model) {
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    model.units[u].unit = std::make_shared<GatheringUnit>(model.units[u].unit, this, static_cast<int>(u));
  }
}

void ParamLifecycle::gather(std::size_t group) {
  FlatGroup& g = ctx_.groups[group];
  if (g.gathered || g.gather_work) return;
  allocate_storage(g.full);
  g.gather_input = g.param_shard;
  if (ctx_.shard_comm == nullptr) {
    if (ctx_.offload_params) upload_shard(group);
    g.full.copy_(g.gather_input);
    g.gathered = true;
    g.gather_input.reset();
    return;
  }
  CommOptions o;
  o.tag = ctx_.tag("param-gather", g.name);
  if (!ctx_.offload_params) {
    g.gather_work = ctx_.shard_comm->all_gather(g.full, g.gather_input, o);
    return;
  }
  // The shard leaves host memory through a device copy. Issued on the offload plugin's
  // copy stream, the upload and the gather that reads it follow each other there while
  // the compute stream goes on (a prefetch overlaps the unit before it); the compute
  // stream waits only at the gather's wait(). An offload plugin without the extension
  // has the compute stream wait for the upload here.
  auto upload_and_gather = [&] {
    upload_shard(group);
    g.gather_work = ctx_.shard_comm->all_gather(g.full, g.gather_input, o);
  };
  if (auto* on_copies = extension<CopyStreamIssue>(*ctx_.offload)) {
    on_copies->on_copy_stream(g.full.device(), upload_and_gather);
  } else {
    upload_and_gather();
  }
}

void ParamLifecycle::upload_shard(std::size_t group) {
  FlatGroup& g = ctx_.groups[group];
  g.gather_input = at::empty(g.param_shard.sizes(), g.param_shard.options().device(g.full.device()));
  ctx_.uploads[group] = ctx_.offload->copy(g.gather_input, g.param_shard);
  ctx_.uploads[group]->before_device_use();  // the stream current here waits for it, not the host
}

void ParamLifecycle::ensure_gathered(std::size_t group) {
  FlatGroup& g = ctx_.groups[group];
  if (g.gathered) return;
  if (!g.gather_work) gather(group);
  if (g.gather_work) {
    g.gather_work->wait();
    g.gather_work.reset();
  }
  g.gather_input.reset();
  g.gathered = true;
}

void ParamLifecycle::before_forward(int unit) {
  const long found = ctx_.plan.group_of_unit[static_cast<std::size_t>(unit)];
  if (found < 0) return;
  const auto group = static_cast<std::size_t>(found);
  ensure_gathered(group);
  const auto depth = static_cast<std::size_t>(ctx_.options.forward_prefetch);
  for (std::size_t k = 1; k <= depth && group + k < ctx_.groups.size(); ++k) {
    if (ctx_.groups[group + k].sharded_params) gather(group + k);
  }
}

void ParamLifecycle::after_forward(int unit, at::Tensor& output) {
  const long found = ctx_.plan.group_of_unit[static_cast<std::size_t>(unit)];
  if (found < 0) return;
  FlatGroup& g = ctx_.groups[static_cast<std::size_t>(found)];
  if (ctx_.options.reshard_after_forward && g.last_unit == unit) release(g);
  if (output.requires_grad()) {
    output.register_hook([this, unit](const at::Tensor&) { before_backward(unit); });
  }
}

void ParamLifecycle::before_backward(int unit) {
  const auto& group_of_unit = ctx_.plan.group_of_unit;
  const auto group = static_cast<std::size_t>(group_of_unit[static_cast<std::size_t>(unit)]);
  if (!ctx_.groups[group].reduced) ensure_gathered(group);
  if (!ctx_.options.backward_prefetch) return;
  // Backward runs units in reverse: the next group needed is the one of the unit before.
  for (int u = unit - 1; u >= 0; --u) {
    const long found = group_of_unit[static_cast<std::size_t>(u)];
    if (found < 0 || static_cast<std::size_t>(found) == group) continue;
    const FlatGroup& previous = ctx_.groups[static_cast<std::size_t>(found)];
    if (previous.sharded_params && !previous.reduced) gather(static_cast<std::size_t>(found));
    break;
  }
}

}  // namespace plait::sharding
