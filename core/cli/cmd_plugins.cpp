#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/schema.hpp"
#include "run/prepare.hpp"

namespace plait::cli {

int plugins(const PluginsArgs& args) {
  const PluginRegistry registry = discover_plugins();
  if (args.json) {
    nlohmann::ordered_json out = {{"search_path", nlohmann::json::array()},
                                  {"plugins", nlohmann::json::array()},
                                  {"refused", nlohmann::json::array()}};
    for (const auto& d : registry.search_dirs()) out["search_path"].push_back({{"path", d.path}, {"origin", d.origin}});
    for (const auto& p : registry.plugins()) {
      nlohmann::ordered_json options = nlohmann::json::array();
      for (const auto& o : parse_schema(p.schema_toml, p.name, "plugin '" + p.name + "'").options) {
        options.push_back({{"key", o.key},
                           {"type", o.type},
                           {"default", o.default_value ? o.default_value->to_toml() : ""},
                           {"doc", o.doc}});
      }
      out["plugins"].push_back({{"name", p.name},
                                {"kind", p.kind},
                                {"version", p.version},
                                {"api", concat(p.api_major, ".", p.api_minor)},
                                {"capabilities", p.capabilities},
                                {"predated_capabilities", p.predated_capabilities},
                                {"available", p.available},
                                {"unavailable_reason", p.unavailable_reason},
                                {"summary", p.summary},
                                {"path", p.path},
                                {"options", options}});
    }
    for (const auto& r : registry.refusals()) out["refused"].push_back({{"path", r.path}, {"reason", r.reason}});
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto& p : registry.plugins()) {
      std::string caps;
      for (const auto& c : p.capabilities) caps += (caps.empty() ? "" : ",") + c;
      for (const auto& c : p.predated_capabilities) {
        caps += concat(caps.empty() ? "" : ", ", "not ", c, ": listed, but built before that API gave it meaning");
      }
      std::cout << p.kind << "\t" << p.name << " " << p.version << " (API " << p.api_major << "." << p.api_minor << ")"
                << (p.available ? "" : " (unavailable: " + p.unavailable_reason + ")")
                << "\n    " << p.summary << "\n    capabilities: " << (caps.empty() ? "-" : caps) << "\n    " << p.path
                << "\n";
    }
    for (const auto& r : registry.refusals()) std::cerr << "refused: " << r.reason << "\n";
    std::cout << registry.plugins().size() << " plugins found in:";
    for (const auto& d : registry.search_dirs()) std::cout << "\n  " << d.path << " (" << d.origin << ")";
    std::cout << "\n";
  }
  return registry.refusals().empty() ? 0 : 1;
}

}  // namespace plait::cli
