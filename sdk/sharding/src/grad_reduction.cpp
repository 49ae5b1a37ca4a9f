#include "plait/sharding/grad_reduction.hpp"

#include "plait/sdk/partial_grads.hpp"

namespace plait::sharding {

void GradReduction::start() {
  for (std::size_t i = 0; i < ctx_.params.size(); ++i) hooks_.add(ctx_.params[i].tensor, [this, i] { on_grad_ready(i); });
  for (const auto& g : ctx_.groups) {
    for (const auto& s : g.segments) {
      if (s.split.partial_grad) partial_grad_shards_.push_back(g.grad_shard.narrow(0, s.offset, s.length));
    }
  }
  grad_staging_.resize(ctx_.groups.size());
}

void GradReduction::before_microbatch(const MicrobatchInfo& mb) {
  reduce_now_ = ctx_.options.stage >= 2 || mb.is_last();
  for (auto& g : ctx_.groups) {
    g.ready = 0;
    g.reduced = false;
  }
}

void GradReduction::on_grad_ready(std::size_t param) {
  if (!reduce_now_) return;
  FlatGroup& g = ctx_.groups[ctx_.plan.group_of_param[param]];
  if (++g.ready == g.params.size()) reduce(ctx_.plan.group_of_param[param]);
}

void GradReduction::reduce(std::size_t group) {
  FlatGroup& g = ctx_.groups[group];
  g.reduced = true;
  at::NoGradGuard no_grad;
  at::Tensor input;
  if (ctx_.options.stage == 1) {
    input = g.grad_full;  // the parameters' .grad are views of it
  } else {
    // Each element written once: a gradient copied in, or zeros where a parameter has none
    // this backward and in the padding (not a zero-fill of the whole buffer first: one
    // pass over the group's bytes fewer on the compute thread).
    input = at::empty({g.padded}, g.full.options());
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      at::Tensor& p = ctx_.params[g.params[k]].tensor;
      at::Tensor part = input.narrow(0, g.offsets[k], p.numel());
      if (p.grad().defined()) {
        part.copy_(p.grad().reshape({-1}));
      } else {
        part.zero_();
      }
      p.mutable_grad() = at::Tensor();
    }
    if (g.padded > g.numel) input.narrow(0, g.numel, g.padded - g.numel).zero_();
  }
  PendingReduce r{group, nullptr, input, at::empty({g.shard}, input.options())};
  if (ctx_.shard_comm != nullptr) {
    ReduceScatterOptions o;
    o.tag = ctx_.tag("grad-reduce", g.name);
    r.work = ctx_.shard_comm->reduce_scatter(r.output, r.input, o);
  } else {
    r.output.copy_(r.input);
  }
  pending_.push_back(std::move(r));
  release(g);  // backward is done with this group's parameters
  // At most two reductions in flight: each holds a whole gradient buffer, and holding
  // them all until the end of backward would cost what sharding gradients saves.
  while (pending_.size() > 2) finish_oldest_reduction();
}

void GradReduction::finish_oldest_reduction() {
  at::NoGradGuard no_grad;
  {
    PendingReduce& r = pending_.front();
    if (r.work) r.work->wait();
    FlatGroup& g = ctx_.groups[r.group];
    if (ctx_.replica_comm != nullptr) {
      AllReduceOptions o;
      o.tag = ctx_.tag("grad-replicas", g.name);
      ctx_.replica_comm->all_reduce(r.output, o)->wait();
    }
    if (ctx_.offload_grads) {
      download_grad_shard(r.group, r.output);
    } else if (accumulated_ && ctx_.options.stage != 1) {
      g.grad_shard.add_(r.output);  // stage 2/3: the earlier microbatches' part is there
    } else {
      g.grad_shard.copy_(r.output);
    }
  }
  pending_.pop_front();
}

// The copy to host memory runs beside the rest of the backward (on a GPU, from pinned
// memory); the host reads the shard only after finish_grad_downloads().
void GradReduction::download_grad_shard(std::size_t group, const at::Tensor& reduced) {
  FlatGroup& g = ctx_.groups[group];
  const at::Tensor typed = reduced.to(g.grad_shard.scalar_type());  // on the device, before it leaves
  GradDownload d{.group = group, .copy = nullptr, .staging = at::Tensor()};
  if (accumulated_ && ctx_.options.stage != 1) {  // stage 2/3: the earlier microbatches' part is there
    if (!grad_staging_[group].defined()) {
      ctx_.on_host_if(true, [&] { grad_staging_[group] = ctx_.offload->to_host(at::empty_like(typed)); });
    }
    d.staging = grad_staging_[group];
  }
  d.copy = ctx_.offload->copy(d.staging.defined() ? d.staging : g.grad_shard, typed);
  downloads_.push_back(std::move(d));
  if (ctx_.metrics) ctx_.metrics->count("offload_d2h_bytes", static_cast<double>(reduced.nbytes()));
}

int64_t GradReduction::staging_bytes() const {
  int64_t bytes = 0;
  for (const auto& t : grad_staging_) bytes += t.defined() ? static_cast<int64_t>(t.nbytes()) : 0;
  return bytes;
}

void GradReduction::finish_grad_downloads() {
  for (GradDownload& d : downloads_) {
    d.copy->before_host_use();
    if (d.staging.defined()) ctx_.on_host_if(true, [&] { ctx_.groups[d.group].grad_shard.add_(d.staging); });
  }
  downloads_.clear();
}

void GradReduction::after_backward(const MicrobatchInfo& mb) {
  if (reduce_now_) {
    for (std::size_t g = 0; g < ctx_.groups.size(); ++g) {
      if (!ctx_.groups[g].reduced) reduce(g);  // hooks missed it: parameters this backward did not reach
    }
    while (!pending_.empty()) finish_oldest_reduction();
    finish_grad_downloads();
    accumulated_ = true;
  }
  if (mb.is_last()) {
    sum_over_tp(partial_grad_shards_, ctx_.tp, ctx_.state_options.device(), ctx_.options.plugin);
  }
  for (auto& g : ctx_.groups) release(g);
}

}  // namespace plait::sharding
