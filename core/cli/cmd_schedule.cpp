#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "pipeline/schedule_plan.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"

namespace plait::cli {
namespace {

// "F3" or, with several stages per rank, "F3b" (b: the rank's second stage).
std::string label(const Action& a, const ScheduleSpec& spec) {
  std::string out = (a.type == ActionType::forward ? "F" : "B") + std::to_string(a.microbatch);
  if (spec.stages_per_rank > 1) out += static_cast<char>('a' + a.stage / spec.pp);
  return out;
}

void write_trace(const SchedulePlan& plan, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t r = 0; r < plan.simulated.ranks.size(); ++r) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r},
                      {"args", {{"name", "pipeline rank " + std::to_string(r)}}}});
    for (const auto& t : plan.simulated.ranks[r]) {
      const bool compute = t.action.type == ActionType::forward || t.action.type == ActionType::backward;
      nlohmann::json e = {{"name", compute ? label(t.action, plan.spec) : action_name(t.action.type)},
                          {"cat", action_name(t.action.type)},
                          {"ph", compute ? "X" : "i"},
                          {"pid", 0},
                          {"tid", r},
                          {"ts", t.start * 1000.0},
                          {"args", {{"stage", t.action.stage}, {"microbatch", t.action.microbatch}}}};
      if (compute) e["dur"] = (t.end - t.start) * 1000.0;
      if (!compute) e["s"] = "t";
      events.push_back(std::move(e));
    }
  }
  std::ofstream out(path);
  PLAIT_CHECK(out.good(), concat("cannot write the trace to ", path), "check the folder exists and is writable");
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1) << "\n";
}

}  // namespace

int schedule_show(const ScheduleArgs& args) {
  const PreparedRun prep = prepare_run(args.config, args.sets);
  const SchedulePlan& plan = prep.schedule;
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
      std::string cell = label(t.action, spec);
      cell.resize(to - from - 1, t.action.type == ActionType::forward ? ' ' : '=');
      row.replace(from, cell.size(), cell);
      row[to - 1] = '|';
    }
    std::printf("rank %zu |%s\n", r, row.c_str());
  }
  std::printf("\n%-8s %10s %10s %16s\n", "rank", "idle", "formula", "peak in flight");
  const double ideal = ideal_idle_fraction(spec);
  for (std::size_t r = 0; r < plan.simulated.ranks.size(); ++r) {
    std::printf("%-8zu %9.1f%% %9.1f%% %16lld\n", r, 100.0 * plan.simulated.idle_fraction[r], 100.0 * ideal,
                static_cast<long long>(plan.simulated.peak_in_flight[r]));
  }
  std::printf("formula: (p-1)/(v*m+p-1) with p %lld, v %lld, m %lld\n", static_cast<long long>(spec.pp),
              static_cast<long long>(spec.stages_per_rank), static_cast<long long>(spec.microbatches));
  if (!args.trace.empty()) {
    write_trace(plan, args.trace);
    std::printf("Chrome trace written to %s (open in chrome://tracing or ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace plait::cli
