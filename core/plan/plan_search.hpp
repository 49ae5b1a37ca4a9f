#pragma once
// `plait plan`'s search: every candidate of the search space (plan/search_space.hpp)
// resolved as a run of it would be, checked by the core and by the plugins' own checks,
// and predicted (plan/config_prediction.hpp); what fits is ranked by tokens/s per
// accelerator. The model's meta build, each tensor layout's and each schedule's plan are
// made once and shared by the candidates that use them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/config_prediction.hpp"
#include "plan/search_space.hpp"

namespace plait {

struct PlanOutcome {
  PlanCandidate candidate;
  std::optional<ConfigPrediction> prediction;  // every check passed (it may still not fit)
  std::string refused;                          // a check's sentence, or why it does not fit; empty: it fits
};

struct PlanSearchResult {
  std::vector<PlanOutcome> fitting;  // best first
  std::vector<PlanOutcome> refused;  // the plugins' or the core's refusals, and what does not fit
  int64_t candidates = 0;
  double seconds = 0;
  ModelSpec model;
};

// `config_path` with `sets` is the run every candidate starts from (its model, data,
// dtype, optimizer); the candidates' own assignments come after them.
PlanSearchResult search_plans(const std::string& config_path, const std::vector<std::string>& sets,
                              const Hardware& hw, const SearchLimits& limits);

// The config a candidate runs: the base run's (load_config) with the candidate's
// assignments, resolved.
ResolvedConfig candidate_config(const ConfigTree& base, const PlanCandidate& candidate, const PluginRegistry& registry);

}  // namespace plait
