#include <iostream>

#include "distributed/job_token.hpp"
#include "cli/commands.hpp"
#include "cli/run_modes.hpp"
#include "plait/sdk/error.hpp"

namespace plait::cli {

int run(const RunArgs& args) {
  if (auto worker = worker_from_env(args.master_addr, args.master_port)) return run_worker(*worker, args);
  const LaunchRequest request = launch_request(args);
  PreparedRun prep = prepare_run(args.config, args.overrides(), known_world(request));
  log_config_notes(prep);
  const LaunchPlan launch = plan_launch(prep, request);
  return launch.single_process ? run_single(prep, launch, args) : run_launcher(prep, launch, args);
}

// The same checks as `plait run` with the same flags, and nothing written.
int config_validate(const RunArgs& args) {
  const LaunchRequest request = launch_request(args);
  PreparedRun prep = prepare_run(args.config, args.overrides(), known_world(request));
  log_config_notes(prep);
  const LaunchPlan launch = plan_launch(prep, request);
  if (!launch.single_process) job_token_from_env();  // a token file plait run would refuse
  std::string plugins;
  for (const auto& c : prep.config->plugins()) plugins += (plugins.empty() ? "" : ", ") + c.role + "=" + c.name;
  std::cout << args.config << ": valid (" << prep.model.family << " " << prep.model.size << ", "
            << closed_form_params(prep.model) << " parameters; " << plugins << "; " << prep.world_size
            << (prep.world_size == 1 ? " process" : " processes") << "; run folder " << launch.folder << ")\n";
  return 0;
}

}  // namespace plait::cli
