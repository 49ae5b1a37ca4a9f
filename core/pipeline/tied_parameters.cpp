#include "pipeline/tied_parameters.hpp"

#include <algorithm>

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

PointToPointOptions p2p(int peer, int id, const std::string& name, const char* phase) {
  PointToPointOptions o;
  o.peer = peer;
  o.tag_id = id;
  o.tag = {"core", phase, name, -1};
  return o;
}

}  // namespace

TiedParameters::TiedParameters(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank,
                               GroupMaker* pp_groups) {
  std::vector<int64_t> stage_of_unit(whole.units.size(), -1);
  for (int64_t s = 0; s < partition.stages(); ++s) {
    for (std::size_t u : partition.units_of[static_cast<std::size_t>(s)]) stage_of_unit[u] = s;
  }
  std::map<std::string, std::pair<int64_t, at::Tensor>> owner;  // name -> (stage, tensor)
  for (std::size_t u = 0; u < whole.units.size(); ++u) {
    StageModel one;
    one.units.push_back(whole.units[u]);
    for (const auto& p : one.all_parameters()) owner[p.name] = {stage_of_unit[u], p.tensor};
  }
  int id = 0;
  std::map<std::pair<int64_t, int64_t>, Communicator*> pair_groups;  // made in the ties' order, the same on every rank
  for (std::size_t u = 0; u < whole.units.size(); ++u) {
    for (const auto& name : whole.units[u].borrowed) {
      auto it = owner.find(name);
      PLAIT_CHECK(it != owner.end(), concat("unit ", whole.units[u].prefix, " borrows ", name, ", which no unit owns"),
                  "a unit may only borrow another unit's parameter");
      const int64_t owner_stage = it->second.first, borrower_stage = stage_of_unit[u];
      const int64_t owner_rank = rank_of_stage(owner_stage, pp), borrower_rank = rank_of_stage(borrower_stage, pp);
      if (owner_rank == borrower_rank) continue;  // one rank holds both: the data plugin sees one parameter
      // A frozen one has no gradient to send: each rank's copy starts alike and stays.
      // (Frozen on every rank alike, so the ties' ids agree.)
      if (!it->second.second.requires_grad()) {
        if (pp_rank == borrower_rank) frozen_borrowed_.push_back(name);
        continue;
      }
      const int this_id = id++;
      if (pp_rank != owner_rank && pp_rank != borrower_rank) continue;
      auto tie = std::make_shared<Tie>();
      tie->name = name;
      tie->owner_stage = owner_stage;
      tie->borrower_stage = borrower_stage;
      tie->owner_here = pp_rank == owner_rank;
      tie->tensor = it->second.second;
      tie->id = this_id;
      const std::pair<int64_t, int64_t> pair = std::minmax(owner_rank, borrower_rank);
      Communicator*& group = pair_groups[pair];
      if (group == nullptr) {
        group = pp_groups->subgroup(concat("tied.", pair.first, "-", pair.second),
                                    {static_cast<int>(pair.first), static_cast<int>(pair.second)});
      }
      tie->group = group;
      tie->peer = pp_rank == pair.first ? 1 : 0;
      ties_.push_back(std::move(tie));
    }
  }
}

void TiedParameters::unlink_borrowed(StageModel& rank_model) const {
  for (auto& slot : rank_model.units) {
    std::vector<std::string> kept;
    for (const auto& name : slot.borrowed) {
      bool tied = std::find(frozen_borrowed_.begin(), frozen_borrowed_.end(), name) != frozen_borrowed_.end();
      for (const auto& t : ties_) tied = tied || (!t->owner_here && t->name == name);
      if (!tied) kept.push_back(name);
    }
    slot.borrowed = std::move(kept);
  }
}

void TiedParameters::attach(const StageModel& rank_model) {
  for (const auto& tie : ties_) {
    if (!tie->owner_here) continue;
    bool found = false;
    for (const auto& p : rank_model.parameters()) {
      if (p.name != tie->name) continue;
      found = true;
      tie->tensor = p.tensor;  // the data plugin may have replaced the tensor it trains
      std::weak_ptr<Tie> weak = tie;
      tie->tensor.register_hook([weak](const at::Tensor& grad) -> at::Tensor {
        auto t = weak.lock();
        if (!t || !t->pending.defined()) return grad;
        at::Tensor extra = std::move(t->pending);
        t->pending = at::Tensor();
        return grad + extra.to(grad.scalar_type());
      });
    }
    PLAIT_CHECK(found, concat("the tied parameter ", tie->name, " is not among this rank's parameters"), "");
  }
}

void TiedParameters::before_backward(int64_t stage, bool last_of_stage) {
  if (!last_of_stage) return;
  for (const auto& tie : ties_) {
    if (!tie->owner_here || tie->owner_stage != stage) continue;
    at::Tensor buffer = at::empty(tie->tensor.sizes(), tie->tensor.options().requires_grad(false));
    tie->group->recv(buffer, p2p(tie->peer, tie->id, tie->name, "tied-grad"))->wait();
    tie->pending = buffer;
  }
}

void TiedParameters::after_backward(int64_t stage, bool last_of_stage) {
  if (!last_of_stage) return;
  for (const auto& tie : ties_) {
    if (tie->owner_here || tie->borrower_stage != stage) continue;
    at::Tensor grad = tie->tensor.grad().defined() ? tie->tensor.grad().contiguous() : at::zeros_like(tie->tensor);
    tie->tensor.mutable_grad() = at::Tensor();
    auto work = tie->group->send(grad, p2p(tie->peer, tie->id, tie->name, "tied-grad"));
    sends_.emplace_back(std::move(work), grad);
  }
}

void TiedParameters::after_step(DataParallel& dp) {
  if (ties_.empty()) return;
  bool owner = false;
  for (const auto& t : ties_) owner = owner || t->owner_here;
  NamedTensors values;
  if (owner) values = dp.full_parameters();  // gathers sharded parameters (a collective over dp)
  for (const auto& tie : ties_) {
    if (tie->owner_here) {
      at::Tensor value;
      for (const auto& [name, t] : values) {
        if (name == tie->name) value = t.detach().to(tie->tensor.scalar_type()).contiguous().clone();
      }
      PLAIT_CHECK(value.defined(), concat("the data plugin returned no value for the tied parameter ", tie->name), "");
      sends_.emplace_back(tie->group->send(value, p2p(tie->peer, tie->id, tie->name, "tied-value")), value);
    } else {
      at::Tensor buffer = at::empty(tie->tensor.sizes(), tie->tensor.options().requires_grad(false));
      tie->group->recv(buffer, p2p(tie->peer, tie->id, tie->name, "tied-value"))->wait();
      at::NoGradGuard no_grad;
      tie->tensor.copy_(buffer);
    }
  }
  for (auto& [work, tensor] : sends_) work->wait();
  sends_.clear();
}

}  // namespace plait
