#pragma once
// The planner's ranking of measured runs beside their measured one, for `plait plan
// --against SWEEP` (a folder of runs, as `plait sweep` writes one): each run's config
// (its config.lock.toml) predicted on a machine, its tokens/s per accelerator measured
// (the median over its steps, and over its repeats "<name>.r1", "<name>.r2", ...), and
// how far the planner's first choice falls behind the fastest measured run.
#include <string>
#include <vector>

#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"

namespace plait {

struct RankedRun {
  std::string name;                   // the folder's name, without a repeat's ".rN"
  std::vector<std::string> folders;   // its repeats
  ConfigPrediction predicted;
  double measured_tokens_per_s_per_gpu = 0;
  int64_t predicted_rank = 0, measured_rank = 0;  // 1: the fastest
};

struct RunRanking {
  std::vector<RankedRun> runs;  // by predicted tokens/s per accelerator, fitting ones first
  // The first choice's measured speed below the fastest run's, as a fraction (0: it is
  // the fastest).
  double first_choice_shortfall = 0;
  const RankedRun& first_choice() const { return runs.front(); }
  const RankedRun& fastest() const;
};

// `folders`: run folders (compare::expand_run_folders's). Refuses fewer than two runs.
RunRanking rank_runs(const std::vector<std::string>& folders, const Hardware& hw);

}  // namespace plait
