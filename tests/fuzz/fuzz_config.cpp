// The config loader and resolver: the input's first line is one --set override, the rest a
// config file, loaded and resolved against the core's tables (no plugins: a plugin table
// is refused as unknown, which is one of the paths taken).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config_loader.hpp"
#include "config/resolve.hpp"
#include "fuzz_input.hpp"
#include "loader/plugin_registry.hpp"
#include "plait/sdk/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto newline = text.find('\n');
  const std::string override_line = newline == std::string::npos ? "" : text.substr(0, newline);
  const std::string body = newline == std::string::npos ? text : text.substr(newline + 1);
  const std::string path = plait::fuzz::as_file(reinterpret_cast<const uint8_t*>(body.data()), body.size(), "run.toml");
  static const plait::PluginRegistry no_plugins;
  try {
    std::vector<std::string> overrides;
    if (!override_line.empty()) overrides.push_back(override_line);
    const plait::LoadedConfig loaded = plait::load_config(path, overrides);
    plait::resolve_config(loaded.tree, no_plugins);
  } catch (const plait::Error&) {
    // refused in one sentence: what plait promises
  }
  return 0;
}
