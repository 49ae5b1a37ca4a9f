// plait new plugin: an out-of-tree plugin project, ready to build and verify.
#include <iostream>

#include "cli/commands.hpp"
#include "scaffold/plugin_template.hpp"

namespace plait::cli {

int new_plugin(const NewPluginArgs& args) {
  const std::string dir = scaffold::write_plugin_project({args.name, args.kind, args.from.value_or(""), args.dir.value_or("")});
  std::cout << "wrote " << dir << ": " << scaffold::plugin_of_kind(args.kind) << " '" << args.name << "'"
            << (args.from ? " on plait::" + *args.from : "") << "\n"
            << "  " << dir << "/test.sh          builds it and runs plait verify --quick\n"
            << "  plait run " << dir << "/config.toml   trains with it (after the build)\n";
  return 0;
}

}  // namespace plait::cli
