#pragma once
// The subcommands of the plait CLI. Each returns the process exit code; errors are
// thrown as plait::Error and printed by main.
#include <optional>
#include <string>
#include <vector>

namespace plait::cli {

struct RunArgs {
  std::string config;
  std::vector<std::string> sets;
  std::optional<long long> steps;
  std::string out;
  bool verbose = false;
};
int run(const RunArgs& args);

struct PluginsArgs {
  bool json = false;
};
int plugins(const PluginsArgs& args);

int models();

struct ConfigArgs {
  std::string config;
  std::vector<std::string> sets;
  bool resolved = false;
  bool provenance = false;
};
int config_show(const ConfigArgs& args);
int config_validate(const ConfigArgs& args);

}  // namespace plait::cli
