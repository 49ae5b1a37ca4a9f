#include "plan/run_ranking.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "compare/comparison.hpp"
#include "compare/run_record.hpp"
#include "plait/sdk/error.hpp"
#include "plan/measured_run.hpp"
#include "plan/plan_inputs.hpp"
#include "run/prepare.hpp"

namespace plait {
namespace {

RankedRun ranked(const std::string& name, const std::vector<std::string>& folders, const Hardware& hw) {
  RankedRun r{name, folders, "", {}, 0, 0, 0};
  std::vector<double> speeds;
  std::string config;
  for (const std::string& folder : folders) {
    const MeasuredRun m = read_measured_run(folder);
    config = m.config;
    r.device = m.device;
    speeds.push_back(m.tokens_per_s);
  }
  r.predicted = predict_config(prepare_for_machine(config, {}), hw);
  r.measured_tokens_per_s_per_gpu = compare::spread_of(speeds).median / static_cast<double>(r.predicted.gpus());
  return r;
}

double predicted_speed(const RankedRun& r) { return r.predicted.fits() ? r.predicted.tokens_per_s_per_gpu : 0.0; }
double measured_speed(const RankedRun& r) { return r.measured_tokens_per_s_per_gpu; }

// Within a billionth: the same config predicted twice, not two plans.
bool same_speed(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// 1 + the runs faster than each: runs of the same speed share a rank.
void competition_ranks(std::vector<RankedRun>& runs, double (*speed)(const RankedRun&), int64_t RankedRun::*rank) {
  for (RankedRun& r : runs) {
    int64_t faster = 0;
    for (const RankedRun& other : runs) faster += speed(other) > speed(r) && !same_speed(speed(other), speed(r)) ? 1 : 0;
    r.*rank = faster + 1;
  }
}

}  // namespace

const RankedRun& RunRanking::fastest() const {
  return *std::min_element(runs.begin(), runs.end(),
                           [](const RankedRun& a, const RankedRun& b) { return a.measured_rank < b.measured_rank; });
}

std::vector<const RankedRun*> RunRanking::first_choices() const {
  std::vector<const RankedRun*> tied;
  for (const RankedRun& r : runs) {
    if (r.predicted_rank == 1) tied.push_back(&r);
  }
  return tied;
}

const RankedRun& RunRanking::first_choice() const {
  const std::vector<const RankedRun*> tied = first_choices();
  return **std::min_element(tied.begin(), tied.end(),
                            [](const RankedRun* a, const RankedRun* b) { return a->measured_rank < b->measured_rank; });
}

RunRanking rank_runs(const std::vector<std::string>& folders, const Hardware& hw) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> repeats;
  for (const std::string& f : folders) {
    const std::string name = compare::combination_of(f);
    if (repeats.find(name) == repeats.end()) order.push_back(name);
    repeats[name].push_back(f);
  }
  PLAIT_CHECK(order.size() >= 2, concat("--against: the folder holds ", order.size(), " run, and a ranking takes two or more"),
              "name that run's own folder to explain it, or a folder of two or more runs (plait sweep writes one)");
  RunRanking out;
  for (const std::string& name : order) out.runs.push_back(ranked(name, repeats[name], hw));
  std::stable_sort(out.runs.begin(), out.runs.end(),
                   [](const RankedRun& a, const RankedRun& b) { return predicted_speed(a) > predicted_speed(b); });
  competition_ranks(out.runs, predicted_speed, &RankedRun::predicted_rank);
  competition_ranks(out.runs, measured_speed, &RankedRun::measured_rank);
  out.first_choice_shortfall = 1 - measured_speed(out.first_choice()) / measured_speed(out.fastest());
  return out;
}

}  // namespace plait
