#include "plan/run_ranking.hpp"

#include <algorithm>
#include <map>

#include "compare/comparison.hpp"
#include "compare/run_record.hpp"
#include "plait/sdk/error.hpp"
#include "plan/measured_run.hpp"
#include "run/prepare.hpp"

namespace plait {
namespace {

RankedRun ranked(const std::string& name, const std::vector<std::string>& folders, const Hardware& hw) {
  RankedRun r{name, folders, {}, 0, 0, 0};
  std::vector<double> speeds;
  std::string config;
  for (const std::string& folder : folders) {
    const MeasuredRun m = read_measured_run(folder);
    config = m.config;
    speeds.push_back(m.tokens_per_s);
  }
  r.predicted = predict_config(prepare_run(config, {}, 0, /*scan_data=*/false), hw);
  r.measured_tokens_per_s_per_gpu = compare::spread_of(speeds).median / static_cast<double>(r.predicted.gpus());
  return r;
}

double predicted_speed(const RankedRun& r) { return r.predicted.fits() ? r.predicted.tokens_per_s_per_gpu : 0.0; }

}  // namespace

const RankedRun& RunRanking::fastest() const {
  return *std::min_element(runs.begin(), runs.end(),
                           [](const RankedRun& a, const RankedRun& b) { return a.measured_rank < b.measured_rank; });
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
  std::vector<RankedRun*> by_measured;
  for (RankedRun& r : out.runs) by_measured.push_back(&r);
  std::stable_sort(by_measured.begin(), by_measured.end(), [](const RankedRun* a, const RankedRun* b) {
    return a->measured_tokens_per_s_per_gpu > b->measured_tokens_per_s_per_gpu;
  });
  for (std::size_t i = 0; i < by_measured.size(); ++i) by_measured[i]->measured_rank = static_cast<int64_t>(i + 1);
  std::stable_sort(out.runs.begin(), out.runs.end(),
                   [](const RankedRun& a, const RankedRun& b) { return predicted_speed(a) > predicted_speed(b); });
  for (std::size_t i = 0; i < out.runs.size(); ++i) out.runs[i].predicted_rank = static_cast<int64_t>(i + 1);
  out.first_choice_shortfall =
      1 - out.first_choice().measured_tokens_per_s_per_gpu / out.fastest().measured_tokens_per_s_per_gpu;
  return out;
}

}  // namespace plait
