// plait new plugin: an out-of-tree plugin project, ready to build and verify.
#include <iostream>

#include "cli/commands.hpp"
#include "plait/sdk/error.hpp"
#include "run/prepare.hpp"
#include "scaffold/plugin_template.hpp"

namespace plait::cli {
namespace {

// Two plugins cannot share a name: the loader refuses the second it finds, so a project
// named after a built-in (or any plugin found here) would never load. Said before writing it.
void check_name_is_free(const std::string& name) {
  const PluginRegistry registry = discover_plugins();
  const PluginRecord* taken = registry.find(name);
  if (taken == nullptr) return;
  throw Error(concat("plait new plugin: '", name, "' is already the name of ", taken->origin == "built-in" ? "the built-in " : "the ",
                     taken->kind, " plugin ", taken->path,
                     ": plait refuses a second plugin of that name, so this one would never load"),
              concat("choose another name, e.g. my-", name, " (`plait plugins` lists the names in use)"));
}

}  // namespace

int new_plugin(const NewPluginArgs& args) {
  check_name_is_free(args.name);
  const std::string dir = scaffold::write_plugin_project({args.name, args.kind, args.from.value_or(""), args.dir.value_or("")});
  std::cout << "wrote " << dir << ": " << scaffold::plugin_of_kind(args.kind) << " '" << args.name << "'"
            << (args.from ? " on plait::" + *args.from : "") << "\n"
            << "  " << dir << "/test.sh          builds it and runs plait verify --quick\n"
            << "  plait run " << dir << "/config.toml   trains with it (after the build)\n";
  return 0;
}

}  // namespace plait::cli
