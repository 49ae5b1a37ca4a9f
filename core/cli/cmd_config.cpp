#include <iostream>

#include "cli/commands.hpp"
#include "config/config_loader.hpp"
#include "run/prepare.hpp"

namespace plait::cli {

int config_show(const ConfigArgs& args) {
  if (args.resolved) {
    PreparedRun prep = prepare_run(args.config, args.sets);
    std::cout << prep.config->to_toml(args.provenance);
  } else {
    std::cout << tree_to_toml(load_config(args.config, args.sets).tree, args.provenance);
  }
  return 0;
}

int config_validate(const ConfigArgs& args) {
  PreparedRun prep = prepare_run(args.config, args.sets);
  std::string plugins;
  for (const auto& c : prep.config->plugins()) plugins += (plugins.empty() ? "" : ", ") + c.role + "=" + c.name;
  std::cout << args.config << ": valid (" << prep.model.family << " " << prep.model.size << ", "
            << closed_form_params(prep.model) << " parameters; " << plugins << "; " << prep.world_size
            << (prep.world_size == 1 ? " process" : " processes") << ")\n";
  return 0;
}

}  // namespace plait::cli
