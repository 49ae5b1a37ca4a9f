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
  std::string device;                 // what it ran on: its config.lock.toml's [train] device
  ConfigPrediction predicted;
  double measured_tokens_per_s_per_gpu = 0;
  // 1: the fastest. Runs of the same speed (within a billionth) share the better rank
  // (1, 1, 3): a tie is not ordered by the folders' names.
  int64_t predicted_rank = 0, measured_rank = 0;
};

struct RunRanking {
  std::vector<RankedRun> runs;  // by predicted tokens/s per accelerator, fitting ones first
  // The planner's first choice's measured tokens/s per accelerator below the fastest
  // run's, as a fraction (0: it is the fastest). Where the planner predicts several runs
  // alike at the top, the best measured of them is its choice: it cannot tell them apart.
  double first_choice_shortfall = 0;
  // The runs predicted fastest: one, or those tied with it.
  std::vector<const RankedRun*> first_choices() const;
  // The best measured of them.
  const RankedRun& first_choice() const;
  const RankedRun& fastest() const;
};

// `folders`: run folders (compare::expand_run_folders's). Refuses fewer than two runs.
RunRanking rank_runs(const std::vector<std::string>& folders, const Hardware& hw);

}  // namespace plait
