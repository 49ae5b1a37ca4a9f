#pragma once
// What `plait plan` prints: one config's prediction (--explain, and the search's best),
// and the search's ranking with what it set aside; as text or as JSON.
#include <cstdint>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"
#include "plan/measured_run.hpp"
#include "plan/meta_rank.hpp"
#include "plan/plan_search.hpp"
#include "plan/run_cost.hpp"
#include "plan/run_ranking.hpp"

namespace plait::cli {

nlohmann::ordered_json prediction_json(const ConfigPrediction& p, const Hardware& hw, const std::string& config);
void print_prediction(const ConfigPrediction& p, const Hardware& hw, const std::string& config);

// `what`: the model in words ("llama 70b"); the top `top` plans, and the set-aside ones
// grouped by their reason.
nlohmann::ordered_json search_json(const PlanSearchResult& r, const Hardware& hw, int64_t gpus, int64_t top);
void print_search(const PlanSearchResult& r, const Hardware& hw, int64_t gpus, int64_t top);

// A figure as a report prints a cost: whole above 100 ("1792380"), else two significant
// digits ("0.42", "1.3", "0.0071"), so a small cost never reads 0.
std::string figure(double x);

// A run of RunCost's tokens with a plan: its days, accelerator-hours and price.
nlohmann::ordered_json cost_json(const RunCost& c);
void print_cost(const RunCost& c, const std::string& plan);

// A config's prediction beside a run's measurement (--against), phase by phase, with
// rank 0's memory (pipeline rank 0's prediction) and tokens/s per accelerator; a warning
// where the run ran on another kind of device than `hw` describes.
nlohmann::ordered_json against_json(const ConfigPrediction& p, const Hardware& hw, const MeasuredRun& m);
void print_against(const ConfigPrediction& p, const Hardware& hw, const MeasuredRun& m);

// Each measured rank's state beside the prediction and its step's traffic (--measure):
// plan_meta_report.cpp.
nlohmann::ordered_json meta_json(const ConfigPrediction& p, const std::vector<MetaRankFigures>& measured);
void print_meta(const ConfigPrediction& p, const std::vector<MetaRankFigures>& measured);

// The planner's ranking of a folder of runs beside the measured one (--against SWEEP):
// plan_ranking_report.cpp.
nlohmann::ordered_json ranking_json(const RunRanking& r, const Hardware& hw);
void print_ranking(const RunRanking& r, const Hardware& hw);

// plait config validate CONFIG --hardware H [--gpus N] (cmd_config.cpp): every check of
// `plait run` but those of the machine it runs on, for H's accelerators at N ranks (the
// config's mesh without --gpus); what only that machine can check is listed.
int config_validate_for_machine(const RunArgs& args, const std::string& hardware, std::optional<int64_t> gpus);

// The best plan at each accelerator count (--scale).
struct ScaleRow {
  int64_t gpus = 0;
  int64_t candidates = 0;
  std::optional<PlanOutcome> best;  // none fits
  std::optional<RunCost> cost;      // with --tokens
};
nlohmann::ordered_json scale_json(const std::vector<ScaleRow>& rows, const Hardware& hw);
void print_scale(const std::vector<ScaleRow>& rows);

}  // namespace plait::cli
