// plait plan --against SWEEP: the planner's order of a folder of runs beside the measured
// one, and how far its first choice falls behind the fastest run.
#include <algorithm>
#include <cstdio>

#include "cli/plan_report.hpp"
#include "util/short_number.hpp"

namespace plait::cli {
namespace {

std::vector<std::string> devices_of(const RunRanking& r) {
  std::vector<std::string> devices;
  for (const RankedRun& run : r.runs) devices.push_back(run.device);
  return devices;
}

std::string names(const std::vector<const RankedRun*>& runs) {
  std::string out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out += concat(i == 0 ? "" : i + 1 == runs.size() ? " and " : ", ", runs[i]->name);
  }
  return out;
}

// The first choice beside the fastest, in the figures the table shows: tokens/s per
// accelerator, the first choice's share below the fastest's. A tie at the top is said:
// the planner does not choose between runs it predicts alike.
void print_first_choice(const RunRanking& r) {
  const std::vector<const RankedRun*> tied = r.first_choices();
  const RankedRun &first = r.first_choice(), &fastest = r.fastest();
  const std::string predicted = rate_text(tied.front()->predicted.tokens_per_s_per_gpu);
  const std::string chosen =
      tied.size() == 1 ? concat("the planner's first choice, ", first.name, ",")
                       : concat("the planner predicts ", names(tied), " alike (", predicted,
                                " tokens/s per accelerator) and does not choose between them; the best measured of them, ",
                                first.name, ",");
  if (first.measured_rank == 1) {
    std::printf("%s is the fastest measured run (%s tokens/s per accelerator)\n", chosen.c_str(),
                rate_text(first.measured_tokens_per_s_per_gpu).c_str());
    return;
  }
  std::printf("%s measured %s tokens/s per accelerator, %.1f%% fewer than the fastest run, %s, at %s\n",
              chosen.c_str(), rate_text(first.measured_tokens_per_s_per_gpu).c_str(), 100 * r.first_choice_shortfall,
              fastest.name.c_str(), rate_text(fastest.measured_tokens_per_s_per_gpu).c_str());
}

}  // namespace

nlohmann::ordered_json ranking_json(const RunRanking& r, const Hardware& hw) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const RankedRun& run : r.runs) {
    runs.push_back({{"name", run.name},
                    {"folders", run.folders},
                    {"device", run.device},
                    {"fits", run.predicted.fits()},
                    {"predicted_tokens_per_s_per_gpu", run.predicted.tokens_per_s_per_gpu},
                    {"measured_tokens_per_s_per_gpu", run.measured_tokens_per_s_per_gpu},
                    {"predicted_rank", run.predicted_rank},
                    {"measured_rank", run.measured_rank}});
  }
  nlohmann::ordered_json tied = nlohmann::ordered_json::array();
  for (const RankedRun* run : r.first_choices()) tied.push_back(run->name);
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  if (const std::string w = measured_elsewhere(hw, devices_of(r)); !w.empty()) warnings.push_back(w);
  return {{"hardware", hw.id},
          {"runs", runs},
          {"first_choices", tied},
          {"first_choice", r.first_choice().name},
          {"fastest", r.fastest().name},
          {"first_choice_shortfall", r.first_choice_shortfall},
          {"warnings", warnings}};
}

void print_ranking(const RunRanking& r, const Hardware& hw) {
  std::printf("%zu runs, as the planner ranks them on %s (%s), beside their measured speed:\n", r.runs.size(),
              hw.id.c_str(), hw.name.c_str());
  if (const std::string w = measured_elsewhere(hw, devices_of(r)); !w.empty()) std::printf("warning: %s\n", w.c_str());
  int width = 3;
  for (const RankedRun& run : r.runs) width = std::max(width, static_cast<int>(run.name.size()));
  std::printf("%9s  %-*s %14s %14s %9s %9s\n", "predicted", width, "run", "tok/s/acc pred", "tok/s/acc meas", "ratio",
              "measured");
  for (const RankedRun& run : r.runs) {
    const double ratio = run.measured_tokens_per_s_per_gpu / run.predicted.tokens_per_s_per_gpu;
    std::printf("%9lld  %-*s %14.1f %14.1f %9.2f %9lld%s\n", static_cast<long long>(run.predicted_rank), width,
                run.name.c_str(), run.predicted.tokens_per_s_per_gpu, run.measured_tokens_per_s_per_gpu, ratio,
                static_cast<long long>(run.measured_rank), run.predicted.fits() ? "" : "  (predicted not to fit)");
  }
  print_first_choice(r);
}

}  // namespace plait::cli
