// plait plan --against SWEEP: the planner's order of a folder of runs beside the measured
// one, and how far its first choice falls behind the fastest run.
#include <algorithm>
#include <cstdio>

#include "cli/plan_report.hpp"

namespace plait::cli {

nlohmann::ordered_json ranking_json(const RunRanking& r, const Hardware& hw) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const RankedRun& run : r.runs) {
    runs.push_back({{"name", run.name},
                    {"folders", run.folders},
                    {"fits", run.predicted.fits()},
                    {"predicted_tokens_per_s_per_gpu", run.predicted.tokens_per_s_per_gpu},
                    {"measured_tokens_per_s_per_gpu", run.measured_tokens_per_s_per_gpu},
                    {"predicted_rank", run.predicted_rank},
                    {"measured_rank", run.measured_rank}});
  }
  return {{"hardware", hw.id},
          {"runs", runs},
          {"first_choice", r.first_choice().name},
          {"fastest", r.fastest().name},
          {"first_choice_shortfall", r.first_choice_shortfall}};
}

void print_ranking(const RunRanking& r, const Hardware& hw) {
  std::printf("%zu runs, as the planner ranks them on %s (%s), beside their measured speed:\n", r.runs.size(),
              hw.id.c_str(), hw.name.c_str());
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
  const RankedRun &first = r.first_choice(), &fastest = r.fastest();
  if (&first == &fastest) {
    std::printf("the planner's first choice, %s, is the fastest measured run\n", first.name.c_str());
  } else {
    std::printf("the planner's first choice, %s, measured %.1f%% below the fastest run, %s (%.1f against %.1f tokens/s "
                "per accelerator)\n",
                first.name.c_str(), 100 * r.first_choice_shortfall, fastest.name.c_str(),
                first.measured_tokens_per_s_per_gpu, fastest.measured_tokens_per_s_per_gpu);
  }
}

}  // namespace plait::cli
