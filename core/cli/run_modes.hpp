#pragma once
// The three ways `plait run` runs: one process; the launcher of this node's ranks; or a
// rank (started by plait's launcher, torchrun or Slurm).
#include "cli/commands.hpp"
#include "distributed/launch_env.hpp"
#include "run/launch_plan.hpp"
#include "run/prepare.hpp"
#include "train/trainer.hpp"

namespace plait::cli {

int run_single(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args);
int run_launcher(PreparedRun& prep, const LaunchPlan& launch, const RunArgs& args);
int run_worker(const WorkerEnv& worker, const RunArgs& args);

// What the modes share.
LaunchRequest launch_request(const RunArgs& args);
// config.lock.toml's text: the resolved config and the [lock] table.
std::string lock_text(const PreparedRun& prep);
void write_lock(const PreparedRun& prep, const std::string& folder);
// A lock file run again: say what differs from this build.
void warn_on_lock_drift(const PreparedRun& prep);
// "done: loss a -> b over n steps in t s" from a run folder's metrics.jsonl: the steps
// after `resume_step` (0: a fresh start), which this run trained.
std::string summary_from_metrics(const std::string& run_dir, double seconds, int64_t resume_step);
// What a process of the run trains with: the checked config and plan, its run folder, its
// world, and the status it keeps (null: none).
RunPlan run_plan(const PreparedRun& prep, const std::string& folder, World* world, RunStatus* status);
// Trains; a failure is written to the log files first, and comes out as an error the
// core made (a plugin's may die with its library).
RunSummary train_logged(const RunPlan& plan);

}  // namespace plait::cli
