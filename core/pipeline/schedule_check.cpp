#include "pipeline/schedule_check.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/p2p_order_check.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr int64_t kActionTypes = static_cast<int64_t>(ActionType::recv_grad) + 1;

// Every (action type, stage, microbatch) of a schedule at its own index, so that what the
// check records of each is a vector: a planner's search checks schedules of thousands of
// actions, thousands of times.
struct ActionIndex {
  int64_t stages = 0, microbatches = 0;
  int64_t size() const { return kActionTypes * stages * microbatches; }
  std::size_t operator()(ActionType t, int64_t stage, int64_t mb) const {
    return static_cast<std::size_t>((static_cast<int64_t>(t) * stages + stage) * microbatches + mb);
  }
};

bool is_compute(ActionType t) { return t == ActionType::forward || t == ActionType::backward; }

}  // namespace

std::string describe(const Action& a) {
  return concat(action_name(a.type), " of stage ", a.stage, " microbatch ", a.microbatch);
}

namespace {

// One schedule's check: the names its failures give, and each part of it.
struct ScheduleCheck {
  const ScheduleSpec& spec;
  const std::string& plugin;
  ActionIndex key_of;

  std::string schedule() const {
    return concat("pipeline schedule '", plugin, "' (pp ", spec.pp, ", ", spec.stages_per_rank,
                  " virtual stages per rank, ", spec.microbatches, " microbatches)");
  }
  [[noreturn]] void fail(int64_t rank, const std::string& what) const {
    throw Error(concat(schedule(), ", rank ", rank, ": ", what),
                "a schedule plugin must follow the executor's rules in sdk/include/plait/sdk/pipeline.hpp");
  }

  // One action of rank r's list, in its order: range, placement, once, after what it needs.
  void check_action(int64_t r, const Action& a, std::vector<char>& seen) const {
    const int64_t stages = spec.stages(), m = spec.microbatches;
    if (a.type == ActionType::weight_grad) fail(r, concat(describe(a), ": this core does not run split weight-gradient actions yet"));
    if (a.stage < 0 || a.stage >= stages || a.microbatch < 0 || a.microbatch >= m) {
      fail(r, concat(describe(a), " is out of range (stages 0..", stages - 1, ", microbatches 0..", m - 1, ")"));
    }
    if (rank_of_stage(a.stage, spec.pp) != r) fail(r, concat(describe(a), ": stage ", a.stage, " lives on rank ", rank_of_stage(a.stage, spec.pp)));
    const bool first = a.stage == 0, last = a.stage == stages - 1;
    if ((a.type == ActionType::recv_activation && first) || (a.type == ActionType::send_grad && first) ||
        (a.type == ActionType::send_activation && last) || (a.type == ActionType::recv_grad && last)) {
      fail(r, concat(describe(a), ": stage ", a.stage, " has no ", first ? "previous" : "next", " stage"));
    }
    char& done = seen[key_of(a.type, a.stage, a.microbatch)];
    if (done != 0) fail(r, concat(describe(a), " appears twice"));
    done = 1;
    const auto needs_before = [&](ActionType before, bool when) {
      if (when && seen[key_of(before, a.stage, a.microbatch)] == 0) {
        fail(r, concat(describe(a), " comes before ", describe({before, a.stage, a.microbatch})));
      }
    };
    needs_before(ActionType::recv_activation, a.type == ActionType::forward && !first);
    needs_before(ActionType::forward, a.type == ActionType::send_activation || a.type == ActionType::backward);
    needs_before(ActionType::recv_grad, a.type == ActionType::backward && !last);
    needs_before(ActionType::backward, a.type == ActionType::send_grad);
  }

  // Every action rank r's stages need is in its list.
  void check_complete(int64_t r, const std::vector<char>& seen) const {
    const int64_t stages = spec.stages();
    for (int64_t s = r; s < stages; s += spec.pp) {
      for (int64_t i = 0; i < spec.microbatches; ++i) {
        std::vector<ActionType> needed = {ActionType::forward, ActionType::backward};
        if (s > 0) needed.insert(needed.end(), {ActionType::recv_activation, ActionType::send_grad});
        if (s < stages - 1) needed.insert(needed.end(), {ActionType::send_activation, ActionType::recv_grad});
        for (ActionType t : needed) {
          if (seen[key_of(t, s, i)] == 0) fail(r, concat(describe({t, s, i}), " is missing"));
        }
      }
    }
  }
};

// Every list played together: sends happen at the sender's clock, a compute waits for the
// send its input comes from. Nothing can move while work remains: a hang.
class SchedulePlay {
 public:
  SchedulePlay(const ScheduleCheck& check, const std::vector<std::vector<Action>>& ranks, double forward_cost,
               double backward_cost)
      : check_(check), ranks_(ranks), forward_cost_(forward_cost), backward_cost_(backward_cost) {
    const auto p = static_cast<std::size_t>(check.spec.pp);
    sim_.ranks.resize(p);
    sim_.peak_in_flight.assign(p, 0);
    next_.assign(p, 0);
    clock_.assign(p, 0.0);
    busy_.assign(p, 0.0);
    in_flight_.assign(p, 0);
    sent_.assign(static_cast<std::size_t>(check.key_of.size()), -1.0);
  }

  SimulatedSchedule play() {
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t r = 0; r < ranks_.size(); ++r) moved = advance(r) || moved;
    }
    std::string stuck;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (next_[r] < ranks_[r].size()) stuck += concat(stuck.empty() ? "" : "; ", "rank ", r, " waits at ", describe(ranks_[r][next_[r]]));
    }
    if (!stuck.empty()) check_.fail(0, concat("the ranks wait for each other forever: ", stuck));
    sim_.makespan = *std::max_element(clock_.begin(), clock_.end());
    for (double b : busy_) sim_.idle_fraction.push_back(sim_.makespan > 0 ? 1.0 - b / sim_.makespan : 0.0);
    return std::move(sim_);
  }

 private:
  // Runs rank r's actions until one waits for another rank; whether any ran.
  bool advance(std::size_t r) {
    bool moved = false;
    for (auto& i = next_[r]; i < ranks_[r].size(); ++i, moved = true) {
      const Action& a = ranks_[r][i];
      double ready = clock_[r];
      if (const auto from = source_of(a)) {
        if (sent_[*from] < 0) break;  // waits for another rank
        ready = std::max(ready, sent_[*from]);
      }
      const double cost = a.type == ActionType::forward ? forward_cost_ : a.type == ActionType::backward ? backward_cost_ : 0.0;
      const TimedAction t{a, ready, ready + cost};
      clock_[r] = t.end;
      if (is_compute(a.type)) busy_[r] += cost;
      if (a.type == ActionType::send_activation || a.type == ActionType::send_grad) sent_[check_.key_of(a.type, a.stage, a.microbatch)] = t.end;
      if (a.type == ActionType::forward) sim_.peak_in_flight[r] = std::max(sim_.peak_in_flight[r], ++in_flight_[r]);
      if (a.type == ActionType::backward) --in_flight_[r];
      sim_.ranks[r].push_back(t);
    }
    return moved;
  }

  // The send a compute's input comes from, if any.
  std::optional<std::size_t> source_of(const Action& a) const {
    if (a.type == ActionType::forward && a.stage > 0) return check_.key_of(ActionType::send_activation, a.stage - 1, a.microbatch);
    if (a.type == ActionType::backward && a.stage + 1 < check_.spec.stages()) {
      return check_.key_of(ActionType::send_grad, a.stage + 1, a.microbatch);
    }
    return std::nullopt;
  }

  const ScheduleCheck& check_;
  const std::vector<std::vector<Action>>& ranks_;
  double forward_cost_, backward_cost_;
  SimulatedSchedule sim_;
  std::vector<std::size_t> next_;
  std::vector<double> clock_, busy_;
  std::vector<int64_t> in_flight_;
  std::vector<double> sent_;  // (send type, sending stage, mb) -> time; -1: not yet
};

}  // namespace

SimulatedSchedule check_schedule(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec,
                                 const std::string& plugin, double forward_cost, double backward_cost) {
  const ScheduleCheck check{spec, plugin, ActionIndex{spec.stages(), spec.microbatches}};
  PLAIT_CHECK(static_cast<int64_t>(ranks.size()) == spec.pp,
              concat("pipeline schedule '", plugin, "' gave ", ranks.size(), " action lists for ", spec.pp, " ranks"), "");
  // 1. Each list on its own (a stage lives on one rank, so what one rank has done is apart
  //    from the others').
  std::vector<char> seen(static_cast<std::size_t>(check.key_of.size()), 0);
  for (int64_t r = 0; r < spec.pp; ++r) {
    for (const Action& a : ranks[static_cast<std::size_t>(r)]) check.check_action(r, a, seen);
    check.check_complete(r, seen);
  }
  // 2. All lists played together.
  SimulatedSchedule sim = SchedulePlay(check, ranks, forward_cost, backward_cost).play();
  // 3. The same lists under NCCL's stricter semantics, with the executor's groups.
  check_p2p_order(ranks, spec, check.schedule() + ": ");
  return sim;
}

}  // namespace plait
