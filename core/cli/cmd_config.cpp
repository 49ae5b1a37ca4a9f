#include <iostream>

#include "cli/commands.hpp"
#include "config/config_loader.hpp"
#include "run/prepare.hpp"

namespace plait::cli {

int config_show(const ConfigArgs& args) {
  if (args.resolved) {
    PreparedRun prep = prepare_run(args.config, args.sets);
    log_config_notes(prep);
    std::cout << prep.config->to_toml(args.provenance);
  } else {
    std::cout << tree_to_toml(load_config(args.config, args.sets).tree, args.provenance);
  }
  return 0;
}

}  // namespace plait::cli
