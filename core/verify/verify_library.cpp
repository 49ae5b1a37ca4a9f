#include "verify/verify_library.hpp"

#include <regex>

#include "config/schema.hpp"
#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"

namespace plait::verify {
namespace {

Outcome row(const std::string& title, bool passed, std::string detail) {
  return {"library", title, passed ? "pass" : "fail", std::move(detail), "plait plugins", 0.0};
}

Outcome manifest(const PluginRecord& p) {
  std::vector<std::string> wrong;
  if (!std::regex_match(p.name, std::regex("[a-z0-9][a-z0-9._-]*"))) {
    wrong.push_back(concat("name '", p.name, "' is not lower-case letters, digits, '.', '_' and '-'"));
  }
  if (!std::regex_match(p.version, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+([-+].*)?"))) {
    wrong.push_back(concat("version '", p.version, "' is not MAJOR.MINOR.PATCH"));
  }
  if (p.summary.empty() || p.summary.find('\n') != std::string::npos) wrong.push_back("the summary is not one line");
  const std::vector<std::string> known = {capability::grad_accum, capability::bf16,    capability::float64,
                                          capability::multi_rank, capability::pipeline, capability::tensor,
                                          capability::offload,    capability::checkpoint};
  std::string own;
  for (const auto& c : p.capabilities) {
    if (std::find(known.begin(), known.end(), c) == known.end()) own += (own.empty() ? "" : ", ") + c;
  }
  if (!wrong.empty()) {
    std::string all;
    for (const auto& w : wrong) all += (all.empty() ? "" : "; ") + w;
    return row("manifest: name, version, summary, capabilities", false, all);
  }
  return row("manifest: name, version, summary, capabilities", true,
             concat(p.kind, " '", p.name, "' ", p.version, ", ", p.capabilities.size(), " capabilities",
                    own.empty() ? "" : concat(" (words the core does not check: ", own, ")")));
}

Outcome schema(const PluginRecord& p) {
  const std::string title = "schema: every key typed, documented, with a default";
  try {
    const TableSchema s = parse_schema(p.schema_toml, p.name, concat("plugin '", p.name, "'"));
    int optional = 0;
    for (const auto& o : s.options) {
      if (!o.default_value && !o.optional) {
        return row(title, false, concat("key '", o.key, "' has no default: every config that does not set it is refused"));
      }
      optional += o.optional ? 1 : 0;
    }
    return row(title, true, concat(s.options.size(), s.options.size() == 1 ? " key" : " keys", optional ? concat(" (", optional, " optional)") : ""));
  } catch (const Error& e) {
    return row(title, false, e.what());
  }
}

}  // namespace

std::vector<Outcome> library_checks(const PluginRecord& p, const HostAbi& host) {
  std::vector<Outcome> out;
  out.push_back(row("loads: entry point, API version, LibTorch, C++ ABI", true,
                    concat(p.path, ": API ", p.api_major, ".", p.api_minor, " into this plait's ", host.api_major, ".",
                           host.api_minor, ", LibTorch ", p.torch_version)));
  out.push_back(row("probe", true, p.available ? "available here" : concat("unavailable here: ", p.unavailable_reason)));
  out.push_back(manifest(p));
  out.push_back(schema(p));
  return out;
}

Outcome refused_library(const Refusal& refusal) {
  return row("loads: entry point, API version, LibTorch, C++ ABI", false, refusal.reason);
}

}  // namespace plait::verify
