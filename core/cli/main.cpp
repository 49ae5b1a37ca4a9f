// plait: a training runtime in which every parallelism strategy is a plugin.
#include <iostream>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "cli/commands.hpp"
#include "log/logging.hpp"
#include "plait/sdk/error.hpp"

int main(int argc, char** argv) {
  using namespace plait::cli;
  CLI::App app{"plait: a training runtime in which every parallelism strategy is a plugin"};
  app.require_subcommand(1);

  RunArgs run_args;
  auto* run_cmd = app.add_subcommand("run", "Train a model as a config describes");
  run_cmd->add_option("config", run_args.config, "Config file (TOML)")->required();
  run_cmd->add_option("--set", run_args.sets, "Override a value: table.key=value (repeatable)")->allow_extra_args(false);
  run_cmd->add_option("--steps", run_args.steps, "Optimizer steps (overrides train.steps)");
  run_cmd->add_option("--out", run_args.out, "Run folder (default runs/<config>-<time>); must not exist or be empty");
  run_cmd->add_flag("-v,--verbose", run_args.verbose, "Debug logging");
  run_cmd->add_option("--nnodes", run_args.nnodes, "Machines in the job (default 1)")->check(CLI::PositiveNumber);
  run_cmd->add_option("--node-rank", run_args.node_rank, "This machine's index, 0 .. nnodes-1")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--nproc-per-node", run_args.nproc_per_node, "Ranks on each machine (default: the mesh's)")
      ->check(CLI::PositiveNumber);
  run_cmd->add_option("--master-addr", run_args.master_addr, "Address of node 0, which hosts the rendezvous store");
  run_cmd->add_option("--master-port", run_args.master_port, "Port of the rendezvous store on node 0")
      ->check(CLI::Range(1, 65535));

  CheckArgs check_args;
  auto* check_cmd = app.add_subcommand(
      "check", "Equivalence check: run a config and its single-process reference, compare losses and gradients");
  check_cmd->add_option("config", check_args.run.config, "Config file (TOML) with the strategy to judge")->required();
  check_cmd->add_option("--set", check_args.run.sets, "Override a value: table.key=value (repeatable)")
      ->allow_extra_args(false);
  check_cmd->add_option("--steps", check_args.run.steps, "Optimizer steps (overrides train.steps)");
  check_cmd->add_option("--out", check_args.run.out, "Folder for both runs and the report");
  check_cmd->add_option("--tolerance", check_args.tolerance,
                        "Largest relative difference allowed (default 1e-10 in float64, 1e-5 in float32)");
  check_cmd->add_option("--nproc-per-node", check_args.run.nproc_per_node, "Ranks of the candidate run");

  PluginsArgs plugins_args;
  auto* plugins_cmd = app.add_subcommand("plugins", "List the plugins found, and any refused");
  plugins_cmd->add_flag("--json", plugins_args.json, "Machine-readable output");

  auto* models_cmd = app.add_subcommand("models", "List model families and sizes with parameter counts");

  ConfigArgs config_args;
  auto* config_cmd = app.add_subcommand("config", "Inspect configs");
  config_cmd->require_subcommand(1);
  auto* show_cmd = config_cmd->add_subcommand("show", "Print a config merged from its bundles and --set flags");
  show_cmd->add_option("config", config_args.config, "Config file (TOML)")->required();
  show_cmd->add_option("--set", config_args.sets, "Override a value: table.key=value")->allow_extra_args(false);
  show_cmd->add_flag("--resolved", config_args.resolved, "Fill in every default, as the run's lock file will");
  show_cmd->add_flag("--provenance", config_args.provenance, "Say which file, flag or default set each value");
  auto* validate_cmd = config_cmd->add_subcommand("validate", "Check a config and its plugins without running");
  validate_cmd->add_option("config", config_args.config, "Config file (TOML)")->required();
  validate_cmd->add_option("--set", config_args.sets, "Override a value: table.key=value")->allow_extra_args(false);

  ScheduleArgs schedule_args;
  auto* schedule_cmd = app.add_subcommand("schedule", "Inspect pipeline schedules");
  schedule_cmd->require_subcommand(1);
  auto* schedule_show_cmd =
      schedule_cmd->add_subcommand("show", "Draw every pipeline rank's schedule as a timeline (nominal costs)");
  schedule_show_cmd->add_option("config", schedule_args.config, "Config file (TOML)")->required();
  schedule_show_cmd->add_option("--set", schedule_args.sets, "Override a value: table.key=value")->allow_extra_args(false);
  schedule_show_cmd->add_option("--trace", schedule_args.trace, "Also write the timeline as a Chrome trace (JSON)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (*run_cmd) return run(run_args);
    if (*check_cmd) return check(check_args);
    if (*plugins_cmd) return plugins(plugins_args);
    if (*models_cmd) return models();
    if (*show_cmd) return config_show(config_args);
    if (*validate_cmd) return config_validate(config_args);
    if (*schedule_show_cmd) return schedule_show(schedule_args);
  } catch (const plait::Error& e) {
    plait::flush_logs();
    std::cerr << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return 1;
  } catch (const c10::Error& e) {  // LibTorch's own errors: the message without its C++ backtrace
    plait::flush_logs();
    std::cerr << "error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    plait::flush_logs();
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
