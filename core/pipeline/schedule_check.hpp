#pragma once
// Checks every pipeline rank's action list against the executor's rules (pipeline.hpp)
// and plays the lists against each other with nominal costs, so that a schedule that
// would hang or skip work is refused before launch with the rank and the action, and so
// that `plait schedule show` can draw it.
#include <string>
#include <vector>

#include "plait/sdk/pipeline.hpp"

namespace plait {

struct TimedAction {
  Action action;
  double start = 0.0, end = 0.0;  // in units of one forward
};

struct SimulatedSchedule {
  std::vector<std::vector<TimedAction>> ranks;  // every action, in list order
  double makespan = 0.0;
  // Share of the makespan each rank spends outside forward and backward.
  std::vector<double> idle_fraction;
  // Most microbatches whose forward has run and backward has not, per rank.
  std::vector<int64_t> peak_in_flight;
};

// Throws plait::Error naming `plugin`, the rank and the action for the first rule broken,
// or, when no rank can move, what each waiting rank waits for.
SimulatedSchedule check_schedule(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec,
                                 const std::string& plugin, double forward_cost = 1.0, double backward_cost = 2.0);

std::string describe(const Action& a);

}  // namespace plait
