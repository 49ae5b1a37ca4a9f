#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/config_loader.hpp"
#include "cli/run_modes.hpp"
#include "compare/comparison.hpp"
#include "compare/report_html.hpp"
#include "compare/report_sections.hpp"
#include "plait/sdk/error.hpp"
#include "config/resolve.hpp"
#include "run/launch_plan.hpp"
#include "run/prepare.hpp"
#include "output/run_folder.hpp"
#include "output/run_status.hpp"
#include "util/subprocess.hpp"
#include "sweep/sweep_plan.hpp"
#include "util/short_number.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

struct Outcome {
  sweep::Combination combination;
  std::string refused;  // the one-sentence reason it was skipped before launch
  std::vector<std::string> idle;  // its settings that do nothing in it (a plugin's table, that plugin not chosen)
};

// A varied setting in the table of a plugin the run does not choose is valid (the table
// is still checked) but does nothing: say so, since the runs then differ in name only.
std::vector<std::string> idle_settings(const PreparedRun& prep, const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  for (const auto& set : sets) {
    const std::string table = set.substr(0, set.find('.'));
    bool used = false;
    for (const auto& schema : core_schemas()) used = used || schema.table == table;
    for (const auto& choice : prep.config->plugins()) used = used || choice.name == table;
    if (!used) {
      out.push_back(concat(set.substr(0, set.find('=')), " does nothing here: [", table, "] is plugin ", table,
                           "'s table, and this run does not use ", table));
    }
  }
  return out;
}

// Each combination checked as `plait run` would check it, before anything starts.
std::vector<Outcome> check_combinations(const SweepArgs& args, const std::vector<sweep::Combination>& all,
                                        const fs::path& folder) {
  std::vector<Outcome> out;
  for (const auto& c : all) {
    RunArgs run;
    run.config = args.config;
    run.sets = args.sets;
    run.steps = args.steps;
    // Each value named by the --vary that gave it, not as a --set the user never typed.
    for (const std::string& set : c.sets) {
      const std::string key = assignment_key(set);
      std::string flag = concat("--vary ", key);
      for (const std::string& vary : args.vary) {
        if (vary.rfind(key + "=", 0) == 0) flag = concat("--vary ", vary);
      }
      run.sets.push_back(derived_override(flag, set));
    }
    run.out = (folder / c.name).string();
    Outcome o{c, "", {}};
    try {
      const LaunchRequest request = launch_request(run);
      const PreparedRun prep = prepare_run(run.config, run.overrides(), known_world(request));
      plan_launch(prep, request);
      o.idle = idle_settings(prep, c.sets);
    } catch (const Error& e) {
      const std::string what = e.what();
      o.refused = what.substr(0, what.find('\n'));
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<std::string> run_argv(const SweepArgs& args, const sweep::Combination& c, const fs::path& out) {
  std::vector<std::string> argv = {boost::dll::program_location().string(), "run", args.config, "--out", out.string()};
  for (const auto& s : args.sets) argv.insert(argv.end(), {"--set", s});
  for (const auto& s : c.sets) argv.insert(argv.end(), {"--set", s});
  if (args.steps) argv.insert(argv.end(), {"--steps", std::to_string(*args.steps)});
  return argv;
}

nlohmann::ordered_json sweep_record(const SweepArgs& args, const std::vector<Outcome>& outcomes,
                                    const nlohmann::ordered_json& runs) {
  nlohmann::ordered_json j = {{"config", args.config}, {"vary", args.vary}, {"repeats", args.repeats},
                              {"combinations", nlohmann::json::array()}, {"runs", runs}};
  for (const auto& o : outcomes) {
    j["combinations"].push_back({{"name", o.combination.name},
                                 {"sets", o.combination.sets},
                                 {"refused", o.refused.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.refused)},
                                 {"does_nothing", o.idle}});
  }
  return j;
}

// Every --vary value checked against its key's schema before any combination is: a value
// no run can take, or one given twice, is the flag's mistake, not a combination's.
void check_variations(const SweepArgs& args, const std::vector<sweep::Variation>& variations) {
  const LoadedConfig loaded = load_config(args.config, args.sets);
  const PluginRegistry registry = discover_plugins(config_plugin_dirs(loaded.tree));
  const sweep::SchemaOf schema_of = [&](const std::string& table) -> const TableSchema* {
    for (const auto& schema : core_schemas()) {
      if (schema.table == table) return &schema;
    }
    const PluginRecord* plugin = registry.find(table);
    return plugin ? &plugin_schema(*plugin) : nullptr;
  };
  for (const auto& v : variations) sweep::check_variation(v, schema_of);
}

}  // namespace

namespace {

// The --vary flags parsed and checked: each value against its key's schema, none also
// given by a --set (it would be overridden in every run, silently), two combinations at least.
std::vector<sweep::Variation> checked_variations(const SweepArgs& args) {
  std::vector<sweep::Variation> variations;
  for (const auto& v : args.vary) variations.push_back(sweep::parse_vary(v));
  PLAIT_CHECK(!variations.empty(), "plait sweep needs at least one --vary KEY=V1,V2,...",
              "for example --vary parallel.data=ddp,zero,fsdp");
  check_variations(args, variations);
  for (const auto& v : variations) {
    for (const auto& set : args.sets) {
      PLAIT_CHECK(assignment_key(set) != v.key,
                  concat("--vary ", v.key, " and --set ", set, " both set ", v.key, ": every run would take the --vary value"),
                  concat("drop the --set, or give its value among --vary ", v.key, "'s"));
    }
  }
  PLAIT_CHECK(sweep::combinations(variations).size() >= 2,
              concat("--vary ", args.vary.front(), " gives one combination: a sweep compares two or more"),
              "give a --vary key two or more values (plait run runs one configuration)");
  return variations;
}

// The combinations checked before launch that may run (two at least), each skipped one
// and each note said.
std::vector<sweep::Combination> runnable(const std::vector<Outcome>& outcomes) {
  std::vector<sweep::Combination> kept;
  for (const auto& o : outcomes) {
    for (const auto& idle : o.idle) std::cout << "note: " << o.combination.name << ": " << idle << "\n";
    if (o.refused.empty()) {
      kept.push_back(o.combination);
    } else {
      std::cout << "skipped " << o.combination.name << ": " << o.refused << "\n";
    }
  }
  PLAIT_CHECK(!kept.empty(),
              concat("every one of the sweep's ", outcomes.size(), " combinations was refused before launch (the reasons "
                     "are above): nothing would run"),
              "fix the config or the --vary values; plait config validate CONFIG --set KEY=VALUE checks one combination");
  PLAIT_CHECK(kept.size() >= 2,
              concat("only ", kept[0].name, " of the sweep's ", outcomes.size(),
                     " combinations is valid (the reasons are above): one run compares with nothing"),
              "fix the config or the --vary values; plait run runs one configuration");
  return kept;
}

struct SweepRuns {
  std::vector<std::string> finished;               // run folders
  std::set<std::size_t> combinations_finished;     // a comparison needs two
};

// Each planned run in turn, until a stop signal; sweep.json rewritten after each.
SweepRuns run_all(const SweepArgs& args, const std::vector<sweep::Combination>& kept,
                  const std::vector<sweep::PlannedRun>& order, const fs::path& folder,
                  const std::vector<Outcome>& outcomes, const std::atomic<int>& stop_signal) {
  SweepRuns done;
  nlohmann::ordered_json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < order.size() && stop_signal == 0; ++i) {
    const auto& planned = order[i];
    const fs::path out = folder / planned.folder;
    const auto start = std::chrono::steady_clock::now();
    std::cout << "[" << i + 1 << "/" << order.size() << "] " << planned.folder << " ... " << std::flush;
    const int code = run_command(run_argv(args, kept[planned.combination], out), (folder / "logs" / (planned.folder + ".log")).string());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto status = read_run_status(out.string());
    const std::string state = code == 0 ? "finished" : stop_signal != 0 ? "interrupted" : "failed";
    std::cout << state << " in " << seconds_text(seconds);
    if (code != 0 && status && !status->reason.empty()) std::cout << ": " << status->reason;
    std::cout << "\n";
    runs.push_back({{"folder", planned.folder}, {"combination", kept[planned.combination].name},
                    {"repeat", planned.repeat}, {"state", state}, {"exit_code", code}, {"seconds", seconds}});
    if (code == 0) {
      done.finished.push_back(out.string());
      done.combinations_finished.insert(planned.combination);
    }
    write_file_atomically((folder / "sweep.json").string(), sweep_record(args, outcomes, runs).dump(2) + "\n");
  }
  write_file_atomically((folder / "sweep.json").string(), sweep_record(args, outcomes, runs).dump(2) + "\n");
  return done;
}

// The comparison of the finished runs (repeats of a combination are one run of it, their
// steps pooled), after a section on what was skipped before launch.
void write_report(const fs::path& folder, const std::vector<std::string>& finished, const std::vector<Outcome>& outcomes) {
  const compare::Comparison c = compare::compare_runs(compare::load_runs(finished));
  std::vector<compare::Section> sections = compare::report_sections(c);
  compare::Section skipped{"Skipped before launch", {}, {}};
  for (const auto& o : outcomes) {
    if (!o.refused.empty()) skipped.sentences.push_back(concat(o.combination.name, ": ", o.refused));
  }
  if (skipped.sentences.empty()) skipped.sentences.push_back("None: every combination was valid.");
  for (const auto& o : outcomes) {
    for (const auto& idle : o.idle) skipped.sentences.push_back(concat("Note: ", o.combination.name, ": ", idle, "."));
  }
  sections.insert(sections.begin(), skipped);
  std::cout << "\n" << compare::render_terminal(sections);
  write_file_atomically((folder / "report.md").string(), compare::render_markdown(sections));
  write_file_atomically((folder / "report.html").string(), compare::render_html(c, sections));
  std::cout << "report: " << (folder / "report.md").string() << " and report.html\n";
}

}  // namespace

int sweep(const SweepArgs& args) {
  const std::vector<sweep::Variation> variations = checked_variations(args);
  // --out, or runs/sweep-<config>-<time>.
  const fs::path folder = args.out ? fs::path(*args.out) : [&] {
    const fs::path run = choose_run_folder("", args.config);
    return run.parent_path() / ("sweep-" + run.filename().string());
  }();
  check_new_folder(folder.string(), "the sweep folder", "--out", "plait never writes into an earlier sweep");
  const std::vector<Outcome> outcomes = check_combinations(args, sweep::combinations(variations), folder);
  const std::vector<sweep::Combination> kept = runnable(outcomes);
  const auto order = sweep::run_order(kept, args.repeats);
  std::cout << "sweep: " << outcomes.size() << " combinations, " << kept.size() << " valid, " << order.size()
            << " runs into " << folder.string() << "\n";
  check_new_folder(folder.string(), "the sweep folder", "--out", "plait never writes into an earlier sweep");
  fs::create_directories(folder);
  fs::create_directories(folder / "logs");
  const std::atomic<int>& stop_signal = catch_stop_signals();
  const SweepRuns done = run_all(args, kept, order, folder, outcomes, stop_signal);
  if (stop_signal != 0) std::cout << "sweep interrupted: the report covers the " << done.finished.size() << " runs that finished\n";
  if (done.combinations_finished.size() < 2) {
    std::cout << "runs of fewer than two combinations finished: no comparison\n";
    return stop_signal != 0 ? 128 + stop_signal : (done.finished.size() == order.size() ? 0 : 1);
  }
  write_report(folder, done.finished, outcomes);
  if (stop_signal != 0) return 128 + stop_signal;
  return done.finished.size() == order.size() ? 0 : 1;
}

}  // namespace plait::cli
