#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/bundle_path.hpp"
#include "config/config_loader.hpp"

namespace plait::cli {

int bundles(const BundlesArgs& args) {
  const std::vector<BundleDir> dirs =
      bundle_dirs(args.config.empty() ? std::vector<BundleDir>{} : config_bundle_dirs(args.config));
  const std::vector<BundleInfo> found = list_bundles(dirs);
  if (args.json) {
    nlohmann::ordered_json out = {{"search_path", nlohmann::json::array()}, {"bundles", nlohmann::json::array()}};
    for (const auto& d : dirs) out["search_path"].push_back({{"path", d.path.string()}, {"origin", d.origin}});
    for (const auto& b : found) {
      out["bundles"].push_back({{"name", b.name},
                                {"description", b.description},
                                {"sets", b.keys},
                                {"extends", b.extends},
                                {"path", b.path.string()},
                                {"origin", b.origin}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& b : found) {
    std::string keys;
    for (const auto& k : b.keys) keys += (keys.empty() ? "" : ", ") + k;
    std::cout << b.name << "\n    " << (b.description.empty() ? "(no description: its first line is not a comment)" : b.description)
              << "\n    sets: " << (keys.empty() ? "-" : keys);
    if (!b.extends.empty()) {
      std::string bases;
      for (const auto& e : b.extends) bases += (bases.empty() ? "" : ", ") + e;
      std::cout << "\n    extends: " << bases;
    }
    std::cout << "\n    " << b.path.string() << " (" << b.origin << ")\n";
  }
  std::cout << found.size() << " bundles found in:";
  for (const auto& d : dirs) std::cout << "\n  " << d.path.string() << " (" << d.origin << ")";
  std::cout << "\nName one in a config with extends = [\"<name>\"].\n";
  return 0;
}

}  // namespace plait::cli
