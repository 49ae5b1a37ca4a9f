#include "cli/commands.hpp"
#include "cli/run_modes.hpp"
#include "plait/sdk/error.hpp"

namespace plait::cli {

int run(const RunArgs& args) {
  if (auto worker = worker_from_env(args.master_addr, args.master_port)) return run_worker(*worker, args);
  std::vector<std::string> sets = args.sets;
  if (args.steps) sets.push_back(concat("train.steps=", *args.steps));
  const bool launch_flags = args.nnodes || args.node_rank || args.nproc_per_node;
  const int known_world = args.nproc_per_node ? args.nnodes.value_or(1) * *args.nproc_per_node : 0;
  PreparedRun prep = prepare_run(args.config, sets, known_world);
  if (prep.world_size == 1 && !launch_flags) return run_single(prep, args);
  return run_launcher(prep, args);
}

}  // namespace plait::cli
