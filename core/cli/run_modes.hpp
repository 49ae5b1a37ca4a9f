#pragma once
// The three ways `plait run` runs: one process; the launcher of this node's ranks; or a
// rank (started by plait's launcher, torchrun or Slurm).
#include "cli/commands.hpp"
#include "distributed/launch_env.hpp"
#include "run/prepare.hpp"

namespace plait::cli {

int run_single(PreparedRun& prep, const RunArgs& args);
int run_launcher(PreparedRun& prep, const RunArgs& args);
int run_worker(const WorkerEnv& worker, const RunArgs& args);

// config.lock.toml's text: the resolved config and the [lock] table.
std::string lock_text(const PreparedRun& prep);
// "done: loss a -> b over n steps in t s" from a run folder's metrics.jsonl.
std::string summary_from_metrics(const std::string& run_dir, double seconds);

}  // namespace plait::cli
