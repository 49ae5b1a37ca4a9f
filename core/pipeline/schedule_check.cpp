#include "pipeline/schedule_check.hpp"

#include <algorithm>
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

SimulatedSchedule check_schedule(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec,
                                 const std::string& plugin, double forward_cost, double backward_cost) {
  const int64_t p = spec.pp, stages = spec.stages(), m = spec.microbatches;
  auto fail = [&](int64_t rank, const std::string& what) {
    throw Error(concat("pipeline schedule '", plugin, "' (pp ", p, ", ", spec.stages_per_rank,
                       " virtual stages per rank, ", m, " microbatches), rank ", rank, ": ", what),
                "a schedule plugin must follow the executor's rules in sdk/include/plait/sdk/pipeline.hpp");
  };
  PLAIT_CHECK(static_cast<int64_t>(ranks.size()) == p,
              concat("pipeline schedule '", plugin, "' gave ", ranks.size(), " action lists for ", p, " ranks"), "");

  // 1. Each list on its own: ranges, placement, each action once, local order. (A stage
  //    lives on one rank, so what one rank has done is apart from the others'.)
  const ActionIndex key_of{stages, m};
  std::vector<char> seen(static_cast<std::size_t>(key_of.size()), 0);
  for (int64_t r = 0; r < p; ++r) {
    const auto& list = ranks[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (a.type == ActionType::weight_grad) {
        fail(r, concat(describe(a), ": this core does not run split weight-gradient actions yet"));
      }
      if (a.stage < 0 || a.stage >= stages || a.microbatch < 0 || a.microbatch >= m) {
        fail(r, concat(describe(a), " is out of range (stages 0..", stages - 1, ", microbatches 0..", m - 1, ")"));
      }
      if (rank_of_stage(a.stage, p) != r) {
        fail(r, concat(describe(a), ": stage ", a.stage, " lives on rank ", rank_of_stage(a.stage, p)));
      }
      const bool first = a.stage == 0, last = a.stage == stages - 1;
      if ((a.type == ActionType::recv_activation && first) || (a.type == ActionType::send_grad && first) ||
          (a.type == ActionType::send_activation && last) || (a.type == ActionType::recv_grad && last)) {
        fail(r, concat(describe(a), ": stage ", a.stage, " has no ", first ? "previous" : "next", " stage"));
      }
      char& done = seen[key_of(a.type, a.stage, a.microbatch)];
      if (done != 0) fail(r, concat(describe(a), " appears twice"));
      done = 1;
      auto needs_before = [&](ActionType before, bool when) {
        if (when && seen[key_of(before, a.stage, a.microbatch)] == 0) {
          fail(r, concat(describe(a), " comes before ", describe({before, a.stage, a.microbatch})));
        }
      };
      needs_before(ActionType::recv_activation, a.type == ActionType::forward && !first);
      needs_before(ActionType::forward, a.type == ActionType::send_activation || a.type == ActionType::backward);
      needs_before(ActionType::recv_grad, a.type == ActionType::backward && !last);
      needs_before(ActionType::backward, a.type == ActionType::send_grad);
    }
    for (int64_t s = r; s < stages; s += p) {
      for (int64_t i = 0; i < m; ++i) {
        std::vector<ActionType> needed = {ActionType::forward, ActionType::backward};
        if (s > 0) needed.insert(needed.end(), {ActionType::recv_activation, ActionType::send_grad});
        if (s < stages - 1) needed.insert(needed.end(), {ActionType::send_activation, ActionType::recv_grad});
        for (ActionType t : needed) {
          if (seen[key_of(t, s, i)] == 0) fail(r, concat(describe({t, s, i}), " is missing"));
        }
      }
    }
  }

  // 2. Play all lists together: sends happen at the sender's clock, a compute waits for
  //    the send its input comes from. Nothing can move while work remains: a hang.
  SimulatedSchedule sim;
  sim.ranks.resize(static_cast<std::size_t>(p));
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> clock(static_cast<std::size_t>(p), 0.0), busy(static_cast<std::size_t>(p), 0.0);
  std::vector<int64_t> in_flight(static_cast<std::size_t>(p), 0);
  sim.peak_in_flight.assign(static_cast<std::size_t>(p), 0);
  std::vector<double> sent(seen.size(), -1.0);  // (send type, sending stage, mb) -> time; -1: not yet
  auto source_of = [&](const Action& a) -> std::pair<bool, std::size_t> {
    if (a.type == ActionType::forward && a.stage > 0) return {true, key_of(ActionType::send_activation, a.stage - 1, a.microbatch)};
    if (a.type == ActionType::backward && a.stage + 1 < stages) return {true, key_of(ActionType::send_grad, a.stage + 1, a.microbatch)};
    return {false, 0};
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < p; ++r) {
      auto& i = next[static_cast<std::size_t>(r)];
      const auto& list = ranks[static_cast<std::size_t>(r)];
      while (i < list.size()) {
        const Action& a = list[i];
        double ready = clock[static_cast<std::size_t>(r)];
        auto [needs, from] = source_of(a);
        if (needs) {
          if (sent[from] < 0) break;  // waits for another rank
          ready = std::max(ready, sent[from]);
        }
        const double cost = a.type == ActionType::forward ? forward_cost : a.type == ActionType::backward ? backward_cost : 0.0;
        TimedAction t{a, ready, ready + cost};
        clock[static_cast<std::size_t>(r)] = t.end;
        if (is_compute(a.type)) busy[static_cast<std::size_t>(r)] += cost;
        if (a.type == ActionType::send_activation || a.type == ActionType::send_grad) sent[key_of(a.type, a.stage, a.microbatch)] = t.end;
        if (a.type == ActionType::forward) {
          sim.peak_in_flight[static_cast<std::size_t>(r)] =
              std::max(sim.peak_in_flight[static_cast<std::size_t>(r)], ++in_flight[static_cast<std::size_t>(r)]);
        }
        if (a.type == ActionType::backward) --in_flight[static_cast<std::size_t>(r)];
        sim.ranks[static_cast<std::size_t>(r)].push_back(t);
        ++i;
        moved = true;
      }
    }
  }
  std::string stuck;
  for (int64_t r = 0; r < p; ++r) {
    const auto& list = ranks[static_cast<std::size_t>(r)];
    if (next[static_cast<std::size_t>(r)] < list.size()) {
      stuck += concat(stuck.empty() ? "" : "; ", "rank ", r, " waits at ", describe(list[next[static_cast<std::size_t>(r)]]));
    }
  }
  if (!stuck.empty()) fail(0, concat("the ranks wait for each other forever: ", stuck));
  // 3. The same lists under NCCL's stricter semantics, with the executor's groups.
  check_p2p_order(ranks, spec, concat("pipeline schedule '", plugin, "' (pp ", p, ", ", spec.stages_per_rank,
                                      " virtual stages per rank, ", m, " microbatches): "));
  sim.makespan = *std::max_element(clock.begin(), clock.end());
  for (int64_t r = 0; r < p; ++r) {
    sim.idle_fraction.push_back(sim.makespan > 0 ? 1.0 - busy[static_cast<std::size_t>(r)] / sim.makespan : 0.0);
  }
  return sim;
}

}  // namespace plait
