#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "pipeline/chrome_trace.hpp"
#include "util/writable_folder.hpp"
#include "pipeline/schedule_plan.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"

namespace plait::cli {
namespace {

void write_trace(const SchedulePlan& plan, const std::string& path) {
  constexpr double kForwardUs = 1000.0;  // one nominal forward drawn as 1 ms
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t r = 0; r < plan.simulated.ranks.size(); ++r) {
    const int tid = static_cast<int>(r);
    events.push_back(thread_name_event(0, tid, "pipeline rank " + std::to_string(r)));
    for (const auto& t : plan.simulated.ranks[r]) {
      const bool compute = t.action.type == ActionType::forward || t.action.type == ActionType::backward;
      events.push_back(trace_event(t.action, plan.spec, 0, tid, t.start * kForwardUs,
                                   compute ? t.end * kForwardUs : t.start * kForwardUs));
    }
  }
  write_chrome_trace(events, path);
}

}  // namespace

int schedule_show(const ScheduleArgs& args) {
  const PreparedRun prep = prepare_run(args.config, args.sets);
  log_config_notes(prep);
  if (!args.trace.empty()) check_file_writable(args.trace, "--trace");  // before the schedule is printed
  const SchedulePlan& plan = prep.pipeline.schedule;
  const ScheduleSpec& spec = plan.spec;
  std::printf("schedule %s: pp %lld, %lld virtual stage%s per rank, %lld microbatches (train.grad_accum)\n",
              plan.plugin.c_str(), static_cast<long long>(spec.pp), static_cast<long long>(spec.stages_per_rank),
              spec.stages_per_rank == 1 ? "" : "s", static_cast<long long>(spec.microbatches));
  std::printf("one column = 1/4 of a forward; a backward costs 2 forwards; '.' = idle%s\n\n",
              spec.stages_per_rank > 1 ? "; a, b, ...: the rank's 1st, 2nd, ... virtual stage" : "");
  constexpr int kColumns = 4;  // per forward
  for (std::size_t r = 0; r < plan.simulated.ranks.size(); ++r) {
    std::string row(static_cast<std::size_t>(std::lround(plan.simulated.makespan * kColumns)), '.');
    for (const auto& t : plan.simulated.ranks[r]) {
      if (t.action.type != ActionType::forward && t.action.type != ActionType::backward) continue;
      const auto from = static_cast<std::size_t>(std::lround(t.start * kColumns));
      const auto to = static_cast<std::size_t>(std::lround(t.end * kColumns));
      std::string cell = short_label(t.action, spec);
      cell.resize(to - from - 1, t.action.type == ActionType::forward ? ' ' : '=');
      row.replace(from, cell.size(), cell);
      row[to - 1] = '|';
    }
    std::printf("rank %zu |%s\n", r, row.c_str());
  }
  std::printf("\n%-8s %10s %10s %16s\n", "rank", "idle", "formula", "peak in flight");
  for (std::size_t r = 0; r < plan.simulated.ranks.size(); ++r) {
    const std::string ideal =
        plan.ideal_idle_share ? concat(std::lround(1000.0 * *plan.ideal_idle_share) / 10.0, "%") : std::string("-");
    std::printf("%-8zu %9.1f%% %10s %16lld\n", r, 100.0 * plan.simulated.idle_fraction[r], ideal.c_str(),
                static_cast<long long>(plan.simulated.peak_in_flight[r]));
  }
  if (plan.ideal_idle_share) {
    std::printf("formula: %s with p %lld, v %lld, m %lld\n", plan.idle_share_formula.c_str(),
                static_cast<long long>(spec.pp), static_cast<long long>(spec.stages_per_rank),
                static_cast<long long>(spec.microbatches));
  } else {
    std::printf("formula: none; the schedule '%s' gives no idle-share formula (plait::ScheduleModel, plugin API 12.1)\n",
                plan.plugin.c_str());
  }
  if (!args.trace.empty()) {
    write_trace(plan, args.trace);
    std::printf("Chrome trace written to %s (open in chrome://tracing or ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace plait::cli
