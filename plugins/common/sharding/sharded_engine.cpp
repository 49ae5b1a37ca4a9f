#include "sharding/sharded_engine.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "plait/sdk/offload.hpp"
#include "plait/sdk/partial_grads.hpp"
#include "plait/sdk/run_check.hpp"

namespace plait::sharding {
namespace {

// A unit whose forward asks the engine to gather its group first.
class GatheringUnit final : public WrappingLayer {
 public:
  GatheringUnit(std::shared_ptr<Layer> inner, ShardedEngine* engine, int unit)
      : WrappingLayer(std::move(inner)), engine_(engine), unit_(unit) {}
  at::Tensor forward(const at::Tensor& x) override {
    engine_->before_forward(unit_);
    at::Tensor y = inner_->forward(x);
    engine_->after_forward(unit_, y);
    return y;
  }

 private:
  ShardedEngine* engine_;
  int unit_;
};

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Union-find over units: units that read each other's parameters share one group.
std::size_t find_root(std::vector<std::size_t>& parent, std::size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Parameters live where the optimizer updates them, and only sharded ones can move.
void require_offload_fits(const ShardingPlan& plan, const Offload& offload) {
  if (!offload.offloads(StateRole::param)) return;
  PLAIT_CHECK(offload.offloads(StateRole::optimizer),
              concat(plan.plugin, ": the offload plugin offloads parameters but not the optimizer"),
              "parameters are updated where the optimizer runs: offload both");
  PLAIT_CHECK(plan.stage == 3,
              concat(plan.plugin, ": parameters can be offloaded only when they are sharded (stage 3); this is stage ",
                     plan.stage),
              "set the offload plugin's `params = false`, or use stage 3");
}

}  // namespace

OpTag ShardedEngine::tag(const char* phase, const std::string& unit) const {
  return {plan_.plugin, phase, unit, microbatch_.index};
}

void ShardedEngine::check(const RunCheck& run) const {
  const ShardingPlan plan = make_plan(options());
  const int64_t dp = run.parallel->get<int64_t>("dp");
  PLAIT_CHECK(plan.shard_size == 0 || dp % plan.shard_size == 0,
              concat(options().where("shard_size"), ": ", plan.plugin, ": shard_size ", plan.shard_size,
                     " does not divide the data-parallel degree ", dp, " ([parallel] dp, ", run.parallel->where("dp"), ")"),
              "hybrid sharding shards within groups of shard_size ranks: choose a divisor of dp, or 0 to shard across "
              "all of them");
  if (run.offload != nullptr) {
    at_place(run.parallel->where("offload"), [&] { require_offload_fits(plan, *run.offload); });
  }
}

// The whole dp group shards; or (hybrid) a shard group within and a replica group across.
void ShardedEngine::make_communicators(const DataParallelSetup& setup) {
  Communicator* dp = setup.dp_group;
  const int dp_size = dp ? dp->size() : 1, dp_rank = dp ? dp->rank() : 0;
  const int64_t shard_size = plan_.shard_size > 0 ? plan_.shard_size : dp_size;
  PLAIT_CHECK(dp_size % shard_size == 0,
              concat(plan_.plugin, ": shard_size ", plan_.shard_size, " does not divide the data-parallel degree ", dp_size),
              "choose a shard_size that divides parallel.dp, or 0 to shard across all of it");
  shard_comm_ = dp;
  if (dp != nullptr && shard_size < dp_size) {
    PLAIT_CHECK(setup.groups != nullptr, concat(plan_.plugin, ": hybrid sharding needs subgroups, and the runtime offers none"), "");
    const int replicas = dp_size / static_cast<int>(shard_size);
    const int my_shard_group = dp_rank / static_cast<int>(shard_size);
    const int my_index = dp_rank % static_cast<int>(shard_size);
    std::vector<int> members(static_cast<std::size_t>(shard_size));
    for (int i = 0; i < shard_size; ++i) members[static_cast<std::size_t>(i)] = my_shard_group * static_cast<int>(shard_size) + i;
    shard_comm_ = setup.groups->subgroup(concat(plan_.plugin, ".shard.", my_shard_group), members);
    std::vector<int> replica(static_cast<std::size_t>(replicas));
    for (int r = 0; r < replicas; ++r) replica[static_cast<std::size_t>(r)] = r * static_cast<int>(shard_size) + my_index;
    replica_comm_ = setup.groups->subgroup(concat(plan_.plugin, ".replica.", my_index), replica);
  }
  shard_rank_ = shard_comm_ ? shard_comm_->rank() : 0;
  shard_count_ = shard_comm_ ? shard_comm_->size() : 1;

}

void ShardedEngine::setup(const DataParallelSetup& setup) {
  plan_ = make_plan(options());
  adamw_ = setup.adamw;
  offload_ = setup.offload;
  tp_ = setup.tp_group;
  pp_ = setup.pp_group;
  params_ = setup.model->parameters();
  PLAIT_CHECK(!params_.empty(), concat(plan_.plugin, ": the model has no parameters"), "");
  const at::ScalarType dtype = params_.front().tensor.scalar_type();
  for (const auto& p : params_) {
    PLAIT_CHECK(p.tensor.scalar_type() == dtype,
                concat(plan_.plugin, ": parameter ", p.name, " is ", p.tensor.scalar_type(), " but others are ", dtype),
                "keep every parameter in one dtype");
  }
  master_dtype_ = dtype;
  working_dtype_ = setup.bf16 ? at::kBFloat16 : dtype;
  if (offload_ != nullptr) {
    offload_optimizer_ = offload_->offloads(StateRole::optimizer);
    offload_grads_ = offload_->offloads(StateRole::grad);
    offload_params_ = offload_->offloads(StateRole::param);
    require_offload_fits(plan_, *offload_);
  }

  make_communicators(setup);
  make_groups(*setup.model);
  if (setup.dp_group != nullptr && plan_.broadcast_init) {
    for (auto& g : groups_) {
      BroadcastOptions o;
      o.root = 0;
      o.tag = tag("broadcast-init", g.name);
      setup.dp_group->broadcast(g.full, o)->wait();
    }
  }
  for (auto& g : groups_) flatten(g);
  for (std::size_t i = 0; i < params_.size(); ++i) hooks_.add(params_[i].tensor, [this, i] { on_grad_ready(i); });
  if (plan_.stage == 3) wrap_units(*setup.model);

  int64_t psi = 0;
  for (const auto& g : groups_) psi += g.numel;
  log().info(plan_.plugin, ": stage ", plan_.stage, ", ", groups_.size(), " groups over ", params_.size(),
                      " parameters (", psi, " elements), sharded ", shard_count_, " ways",
                      replica_comm_ ? concat(", replicated ", replica_comm_->size(), " ways") : std::string(),
                      "; working ", working_dtype_, ", master ", master_dtype_,
                      offload_ ? concat("; offload: optimizer ", offload_optimizer_, " grads ", offload_grads_, " params ",
                                        offload_params_)
                               : std::string());
}

namespace {

// Which unit holds each parameter (by index into `params`), and each unit's parameters.
struct UnitParams {
  std::vector<int> unit_of_param;
  std::vector<std::vector<std::size_t>> of_unit;
  std::map<std::string, std::size_t> index_by_name;
};

UnitParams unit_params(const StageModel& model, const std::vector<ParamRef>& params) {
  UnitParams out;
  std::map<const void*, std::size_t> index_of;
  for (std::size_t i = 0; i < params.size(); ++i) {
    index_of[params[i].tensor.unsafeGetTensorImpl()] = i;
    out.index_by_name[params[i].name] = i;
  }
  out.unit_of_param.assign(params.size(), -1);
  out.of_unit.resize(model.units.size());
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    for (const auto& p : model.units[u].unit->named_parameters(/*recurse=*/true)) {
      const std::size_t i = index_of.at(p.value().unsafeGetTensorImpl());
      out.unit_of_param[i] = static_cast<int>(u);
      out.of_unit[u].push_back(i);
    }
  }
  return out;
}

// Units that read each other's parameters (a tied head and its embedding) must be
// gathered together: the sets of such units, in order of their first unit.
std::vector<std::vector<std::size_t>> units_sharing_parameters(const StageModel& model, const UnitParams& up,
                                                               const std::string& plugin) {
  const std::size_t units = model.units.size();
  std::vector<std::size_t> parent(units);
  std::iota(parent.begin(), parent.end(), 0);
  for (std::size_t u = 0; u < units; ++u) {
    for (const auto& name : model.units[u].borrowed) {
      auto it = up.index_by_name.find(name);
      PLAIT_CHECK(it != up.index_by_name.end(),
                  concat(plugin, ": unit ", model.units[u].prefix, " borrows '", name, "', which no unit owns"),
                  "the model builder's `borrowed` list must name parameters of other units");
      const auto owner = static_cast<std::size_t>(up.unit_of_param[it->second]);
      parent[find_root(parent, u)] = find_root(parent, owner);
    }
  }
  std::map<std::size_t, std::vector<std::size_t>> by_root;
  for (std::size_t u = 0; u < units; ++u) by_root[find_root(parent, u)].push_back(u);
  std::vector<std::vector<std::size_t>> sets;
  for (auto& [root, members] : by_root) sets.push_back(members);
  std::sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return sets;
}

struct GroupDraft {
  std::vector<std::size_t> params;
  int first = 0, last = 0;
  bool persistent = false;
  std::string name;
};

// One draft per unit set; under stage 3 small parameters go to one persistent group;
// consecutive sets are merged up to the plan's cap.
std::vector<GroupDraft> draft_groups(const StageModel& model, const std::vector<std::vector<std::size_t>>& sets,
                                     const UnitParams& up, const std::vector<ParamRef>& params, const ShardingPlan& plan,
                                     int64_t element_bytes) {
  std::vector<GroupDraft> drafts;
  GroupDraft persistent{{}, 0, static_cast<int>(model.units.size()) - 1, true, "persistent"};
  auto bytes = [&](const GroupDraft& x) {
    int64_t n = 0;
    for (std::size_t i : x.params) n += params[i].tensor.numel() * element_bytes;
    return n;
  };
  const auto cap = static_cast<int64_t>(plan.group_cap_mb * 1024 * 1024);
  for (const auto& set : sets) {
    GroupDraft d;
    d.first = static_cast<int>(set.front());
    d.last = static_cast<int>(set.back());
    for (std::size_t u : set) {
      const std::string& prefix = model.units[u].prefix;
      d.name += (d.name.empty() ? "" : "+") + (prefix.empty() ? concat("unit", u) : prefix.substr(0, prefix.size() - 1));
      for (std::size_t i : up.of_unit[u]) {
        const bool small = plan.stage == 3 && params[i].tensor.numel() < plan.persistence_threshold;
        (small ? persistent : d).params.push_back(i);
      }
    }
    if (d.params.empty()) continue;
    if (!drafts.empty() && cap > 0 && bytes(drafts.back()) + bytes(d) <= cap) {
      GroupDraft& prev = drafts.back();
      prev.params.insert(prev.params.end(), d.params.begin(), d.params.end());
      prev.first = std::min(prev.first, d.first);
      prev.last = std::max(prev.last, d.last);
      prev.name += "+" + d.name;
    } else {
      drafts.push_back(std::move(d));
    }
  }
  if (!persistent.params.empty()) drafts.push_back(std::move(persistent));
  return drafts;
}

}  // namespace

void ShardedEngine::make_groups(const StageModel& model) {
  const UnitParams up = unit_params(model, params_);
  const auto sets = units_sharing_parameters(model, up, plan_.plugin);
  const auto drafts = draft_groups(model, sets, up, params_, plan_, c10::elementSize(working_dtype_));
  group_of_param_.assign(params_.size(), 0);
  at::NoGradGuard no_grad;
  for (const auto& d : drafts) {
    FlatGroup g;
    g.name = d.name;
    g.params = d.params;
    g.first_unit = d.first;
    g.last_unit = d.last;
    g.sharded_params = plan_.stage == 3 && !d.persistent;
    std::vector<at::Tensor> pieces;
    for (std::size_t i : g.params) {
      g.offsets.push_back(g.numel);
      g.numel += params_[i].tensor.numel();
      pieces.push_back(params_[i].tensor.detach().reshape({-1}));
      group_of_param_[i] = groups_.size();
    }
    g.padded = round_up(g.numel, shard_count_);
    g.shard = g.padded / shard_count_;
    g.full = at::zeros({g.padded}, params_.front().tensor.options().dtype(master_dtype_).requires_grad(false));
    g.full.narrow(0, 0, g.numel).copy_(at::cat(pieces));
    groups_.push_back(std::move(g));
  }
  // A unit gathers the sharded group of its own parameters, or of those it borrows;
  // -1: nothing of it is sharded.
  group_of_unit_.assign(model.units.size(), -1);
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    for (std::size_t i : up.of_unit[u]) {
      if (groups_[group_of_param_[i]].sharded_params) group_of_unit_[u] = static_cast<long>(group_of_param_[i]);
    }
    for (const auto& name : model.units[u].borrowed) {
      const std::size_t owner = group_of_param_[up.index_by_name.at(name)];
      if (group_of_unit_[u] < 0 && groups_[owner].sharded_params) group_of_unit_[u] = static_cast<long>(owner);
    }
  }
  uploads_.resize(groups_.size());
  grad_staging_.resize(groups_.size());
}

// The group's parameters become views of its working-dtype flat buffer; this rank's
// master shard, gradient shard and moments are made; a stage-3 buffer is then freed.
void ShardedEngine::flatten(FlatGroup& g) {
  at::NoGradGuard no_grad;
  at::Tensor master_full = g.full;  // master dtype, whole, identical on every rank
  std::vector<int64_t> numels;
  std::vector<bool> decay;
  std::vector<TensorSplit> splits;
  for (std::size_t i : g.params) {
    numels.push_back(params_[i].tensor.numel());
    decay.push_back(params_[i].decay);
    splits.push_back(params_[i].split);
  }
  g.segments = segments_of(g.offsets, numels, decay, splits, shard_rank_, g.shard);
  g.full = working_dtype_ == master_dtype_ ? master_full : master_full.to(working_dtype_);
  for (std::size_t k = 0; k < g.params.size(); ++k) {
    at::Tensor& p = params_[g.params[k]].tensor;
    p.set_data(g.full.narrow(0, g.offsets[k], numels[k]).view(p.sizes()));
  }
  at::Tensor working_shard = shard_of(g.full, shard_rank_, g.shard);
  if (g.sharded_params) {
    on_host_if(offload_params_, [&] { g.param_shard = offload_params_ ? offload_->to_host(working_shard) : working_shard.clone(); });
    working_shard = g.param_shard;
  }
  g.master_is_alias = !offload_optimizer_ && working_dtype_ == master_dtype_;
  on_host_if(offload_optimizer_, [&] {
    at::Tensor master_shard = shard_of(master_full, shard_rank_, g.shard);
    if (g.master_is_alias) {
      g.master = working_shard;
    } else {
      g.master = offload_optimizer_ ? offload_->to_host(master_shard) : master_shard.clone();
    }
    g.moments = adamw_state_like(g.master);
  });
  const auto grad_options = g.full.options();
  if (plan_.stage == 1) {
    g.grad_full = at::zeros({g.padded}, grad_options);
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      at::Tensor& p = params_[g.params[k]].tensor;
      p.mutable_grad() = g.grad_full.narrow(0, g.offsets[k], numels[k]).view(p.sizes());
    }
  }
  if (offload_grads_) {
    on_host_if(true, [&] { g.grad_shard = offload_->to_host(at::zeros({g.shard}, grad_options.dtype(master_dtype_))); });
  } else if (plan_.stage == 1) {
    g.grad_shard = shard_of(g.grad_full, shard_rank_, g.shard);
  } else {
    g.grad_shard = at::zeros({g.shard}, grad_options);
  }
  for (const auto& s : g.segments) {
    if (s.split.partial_grad) partial_grad_shards_.push_back(g.grad_shard.narrow(0, s.offset, s.length));
  }
  if (g.sharded_params) {
    free_storage(g.full);
  } else {
    g.gathered = true;
  }
}

void ShardedEngine::wrap_units(StageModel& model) {
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    model.units[u].unit = std::make_shared<GatheringUnit>(model.units[u].unit, this, static_cast<int>(u));
  }
}

at::Tensor ShardedEngine::gather_shards(const at::Tensor& shard, const FlatGroup& g, const char* phase) {
  at::Tensor out = at::empty({g.padded}, shard.options());
  if (shard_comm_ == nullptr) return out.copy_(shard);
  CommOptions o;
  o.tag = tag(phase, g.name);
  at::Tensor input = shard.contiguous();
  shard_comm_->all_gather(out, input, o)->wait();
  return out;
}

void ShardedEngine::gather(std::size_t group) {
  FlatGroup& g = groups_[group];
  if (g.gathered || g.gather_work) return;
  allocate_storage(g.full);
  // The shard leaves host memory (offloaded parameters) through a device copy, which
  // the gather waits for on the device, not on the host.
  g.gather_input = g.param_shard;
  if (offload_params_) {
    g.gather_input = at::empty(g.param_shard.sizes(), g.param_shard.options().device(g.full.device()));
    uploads_[group] = offload_->copy(g.gather_input, g.param_shard);
    uploads_[group]->before_device_use();
  }
  if (shard_comm_ == nullptr) {
    g.full.copy_(g.gather_input);
    g.gathered = true;
    g.gather_input.reset();
    return;
  }
  CommOptions o;
  o.tag = tag("param-gather", g.name);
  g.gather_work = shard_comm_->all_gather(g.full, g.gather_input, o);
}

void ShardedEngine::ensure_gathered(std::size_t group) {
  FlatGroup& g = groups_[group];
  if (g.gathered) return;
  if (!g.gather_work) gather(group);
  if (g.gather_work) {
    g.gather_work->wait();
    g.gather_work.reset();
  }
  g.gather_input.reset();
  g.gathered = true;
}

void ShardedEngine::release(std::size_t group) {
  FlatGroup& g = groups_[group];
  if (!g.sharded_params || !g.gathered) return;
  free_storage(g.full);
  g.gathered = false;
}

void ShardedEngine::before_forward(int unit) {
  if (group_of_unit_[static_cast<std::size_t>(unit)] < 0) return;
  const auto group = static_cast<std::size_t>(group_of_unit_[static_cast<std::size_t>(unit)]);
  ensure_gathered(group);
  for (std::size_t k = 1; k <= static_cast<std::size_t>(plan_.forward_prefetch) && group + k < groups_.size(); ++k) {
    if (groups_[group + k].sharded_params) gather(group + k);
  }
}

void ShardedEngine::after_forward(int unit, at::Tensor& output) {
  if (group_of_unit_[static_cast<std::size_t>(unit)] < 0) return;
  const auto group = static_cast<std::size_t>(group_of_unit_[static_cast<std::size_t>(unit)]);
  if (plan_.reshard_after_forward && groups_[group].last_unit == unit) release(group);
  if (output.requires_grad()) {
    output.register_hook([this, unit](const at::Tensor&) { before_backward(unit); });
  }
}

void ShardedEngine::before_backward(int unit) {
  const auto group = static_cast<std::size_t>(group_of_unit_[static_cast<std::size_t>(unit)]);
  if (!groups_[group].reduced) ensure_gathered(group);
  if (!plan_.backward_prefetch) return;
  // Backward runs units in reverse: the next group needed is the one of the unit before.
  for (int u = unit - 1; u >= 0; --u) {
    const long found = group_of_unit_[static_cast<std::size_t>(u)];
    if (found < 0 || static_cast<std::size_t>(found) == group) continue;
    const auto previous = static_cast<std::size_t>(found);
    if (groups_[previous].sharded_params && !groups_[previous].reduced) gather(previous);
    break;
  }
}

void ShardedEngine::before_microbatch(const MicrobatchInfo& mb) {
  microbatch_ = mb;
  reduce_now_ = plan_.stage >= 2 || mb.is_last();
  for (auto& g : groups_) {
    g.ready = 0;
    g.reduced = false;
  }
}

void ShardedEngine::on_grad_ready(std::size_t param) {
  if (!reduce_now_) return;
  const std::size_t group = group_of_param_[param];
  if (++groups_[group].ready == groups_[group].params.size()) reduce(group);
}

void ShardedEngine::reduce(std::size_t group) {
  FlatGroup& g = groups_[group];
  g.reduced = true;
  at::NoGradGuard no_grad;
  at::Tensor input;
  if (plan_.stage == 1) {
    input = g.grad_full;  // the parameters' .grad are views of it
  } else {
    input = at::zeros({g.padded}, g.full.options());
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      at::Tensor& p = params_[g.params[k]].tensor;
      if (p.grad().defined()) input.narrow(0, g.offsets[k], p.numel()).copy_(p.grad().reshape({-1}));
      p.mutable_grad() = at::Tensor();
    }
  }
  PendingReduce r{group, nullptr, input, at::empty({g.shard}, input.options())};
  if (shard_comm_ != nullptr) {
    ReduceScatterOptions o;
    o.tag = tag("grad-reduce", g.name);
    r.work = shard_comm_->reduce_scatter(r.output, r.input, o);
  } else {
    r.output.copy_(r.input);
  }
  pending_.push_back(std::move(r));
  release(group);  // backward is done with this group's parameters
  // At most two reductions in flight: each holds a whole gradient buffer, and holding
  // them all until the end of backward would cost what sharding gradients saves.
  while (pending_.size() > 2) finish_oldest_reduction();
}

void ShardedEngine::finish_reductions() {
  while (!pending_.empty()) finish_oldest_reduction();
}

void ShardedEngine::finish_oldest_reduction() {
  at::NoGradGuard no_grad;
  {
    PendingReduce& r = pending_.front();
    if (r.work) r.work->wait();
    if (replica_comm_ != nullptr) {
      AllReduceOptions o;
      o.tag = tag("grad-replicas", groups_[r.group].name);
      replica_comm_->all_reduce(r.output, o)->wait();
    }
    FlatGroup& g = groups_[r.group];
    if (offload_grads_) {
      download_grad_shard(r.group, r.output);
    } else if (accumulated_ && plan_.stage != 1) {
      g.grad_shard.add_(r.output);  // stage 2/3: the earlier microbatches' part is there
    } else {
      g.grad_shard.copy_(r.output);
    }
  }
  pending_.pop_front();
}

// The copy to host memory runs beside the rest of the backward (on a GPU, from pinned
// memory); the host reads the shard only after finish_grad_downloads().
void ShardedEngine::download_grad_shard(std::size_t group, const at::Tensor& reduced) {
  FlatGroup& g = groups_[group];
  const at::Tensor typed = reduced.to(g.grad_shard.scalar_type());  // on the device, before it leaves
  GradDownload d{.group = group, .copy = nullptr, .staging = at::Tensor()};
  if (accumulated_ && plan_.stage != 1) {  // stage 2/3: the earlier microbatches' part is there
    if (!grad_staging_[group].defined()) {
      on_host_if(true, [&] { grad_staging_[group] = offload_->to_host(at::empty_like(typed)); });
    }
    d.staging = grad_staging_[group];
  }
  d.copy = offload_->copy(d.staging.defined() ? d.staging : g.grad_shard, typed);
  downloads_.push_back(std::move(d));
  if (context().metrics) context().metrics->count("offload_d2h_bytes", static_cast<double>(reduced.nbytes()));
}

void ShardedEngine::finish_grad_downloads() {
  for (GradDownload& d : downloads_) {
    d.copy->before_host_use();
    if (d.staging.defined()) on_host_if(true, [&] { groups_[d.group].grad_shard.add_(d.staging); });
  }
  downloads_.clear();
}

void ShardedEngine::after_backward(const MicrobatchInfo& mb) {
  if (reduce_now_) {
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].reduced) reduce(g);  // hooks missed it: parameters this backward did not reach
    }
    finish_reductions();
    finish_grad_downloads();
    accumulated_ = true;
  }
  if (mb.is_last()) {
    sum_over_tp(partial_grad_shards_, tp_, groups_.front().full.device(), plan_.plugin);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) release(g);
}

void ShardedEngine::update_group(FlatGroup& g, const UpdateArgs& args) {
  at::NoGradGuard no_grad;
  at::Tensor grad = g.grad_shard.scalar_type() == master_dtype_ ? g.grad_shard : g.grad_shard.to(master_dtype_);
  if (args.clip_coef < 1.0) grad.mul_(args.clip_coef);
  AdamWTensors all;  // each parameter's run of the shard: decay differs between them
  for (const auto& s : g.segments) {
    all.add(g.master.narrow(0, s.offset, s.length), grad.narrow(0, s.offset, s.length),
            {g.moments.exp_avg.narrow(0, s.offset, s.length), g.moments.exp_avg_sq.narrow(0, s.offset, s.length)},
            s.decay);
  }
  adamw_update_all(all, args.step, args.lr, adamw_);
}

void ShardedEngine::clear_gradients(FlatGroup& g) {
  at::NoGradGuard no_grad;
  // Stage 1 without offload: the gradient shard is a view of the whole gradient.
  if (g.grad_full.defined()) g.grad_full.zero_();
  if (!g.grad_full.defined() || offload_grads_) on_host_if(offload_grads_, [&] { g.grad_shard.zero_(); });
}

GradNorm ShardedEngine::grad_norm() {
  PLAIT_CHECK(accumulated_, concat(plan_.plugin, ": step() before any backward"), "");
  SquaredNorms local;
  for (const auto& g : groups_) {
    for (const auto& s : g.segments) local.add(s.split, g.grad_shard.narrow(0, s.offset, s.length));
  }
  return global_grad_norm(local, shard_comm_, tp_, pp_, groups_.front().full.options(), plan_.plugin);
}

void ShardedEngine::update(const UpdateArgs& args) {
  std::vector<std::shared_ptr<Work>> gathers;
  std::vector<at::Tensor> inputs;
  for (std::size_t k = 0; k < groups_.size(); ++k) {
    FlatGroup& g = groups_[k];
    if (auto& last = uploads_[k]) last->before_host_use();  // the host is about to write its source
    on_host_if(offload_optimizer_, [&] { update_group(g, args); });
    at::NoGradGuard no_grad;
    at::Tensor working = g.sharded_params ? g.param_shard : shard_of(g.full, shard_rank_, g.shard);
    if (!g.master_is_alias) {
      if (offload_optimizer_ && !offload_params_) {
        // Host master to device parameters: the copy runs while the host updates the next
        // group; a working dtype other than the master's is made on the device.
        const bool same = g.master.scalar_type() == working.scalar_type();
        const at::Tensor landing = same ? working : at::empty(g.master.sizes(), g.master.options().device(working.device()));
        uploads_[k] = offload_->copy(landing, g.master);
        uploads_[k]->before_device_use();
        if (!same) working.copy_(landing);
      } else {
        on_host_if(offload_params_, [&] { working.copy_(g.master); });
      }
      if (context().metrics && offload_optimizer_) context().metrics->count("offload_h2d_bytes", static_cast<double>(working.nbytes()));
    }
    if (!g.sharded_params && shard_comm_ != nullptr) {
      // Whole parameters on every rank: gather the updated shards (while the next group updates).
      inputs.push_back(working.clone());
      CommOptions o;
      o.tag = tag("param-gather", g.name);
      gathers.push_back(shard_comm_->all_gather(g.full, inputs.back(), o));
    }
    clear_gradients(g);
  }
  for (auto& w : gathers) w->wait();
  accumulated_ = false;
}

void ShardedEngine::discard_gradients() {
  for (auto& g : groups_) clear_gradients(g);
  accumulated_ = false;
}

NamedTensors ShardedEngine::gather_named(at::Tensor FlatGroup::*shard, const char* phase) {
  NamedTensors out;
  for (auto& g : groups_) {
    at::Tensor whole = gather_shards((g.*shard).to(g.full.device()), g, phase);
    for (std::size_t k = 0; k < g.params.size(); ++k) {
      const ParamRef& p = params_[g.params[k]];
      out.emplace_back(p.name, whole.narrow(0, g.offsets[k], p.tensor.numel()).view(p.tensor.sizes()).clone());
    }
  }
  return out;
}

NamedTensors ShardedEngine::full_gradients() { return gather_named(&FlatGroup::grad_shard, "debug-grad-gather"); }

NamedTensors ShardedEngine::full_parameters() { return gather_named(&FlatGroup::master, "param-export"); }

StateBytes ShardedEngine::state_bytes() const {
  StateBytes b;
  for (const auto& g : groups_) {
    if (g.sharded_params) {
      (offload_params_ ? b.host_params : b.params) += static_cast<int64_t>(g.param_shard.nbytes());
    } else {
      b.params += static_cast<int64_t>(g.full.nbytes());
    }
    if (g.grad_full.defined()) b.grads += static_cast<int64_t>(g.grad_full.nbytes());
    if (!g.grad_full.defined() || offload_grads_) {
      (offload_grads_ ? b.host_grads : b.grads) += static_cast<int64_t>(g.grad_shard.nbytes());
    }
    int64_t optimizer = static_cast<int64_t>(g.moments.exp_avg.nbytes() + g.moments.exp_avg_sq.nbytes());
    if (!g.master_is_alias) optimizer += static_cast<int64_t>(g.master.nbytes());
    (offload_optimizer_ ? b.host_optimizer : b.optimizer) += optimizer;
  }
  return b;
}

}  // namespace plait::sharding
