#pragma once
// Which plugin hook a thread is in (debug/plugin_call.hpp marks every call the core makes
// into a plugin's hook), so that a crash's last words and its flight record say "inside
// plugin 'x', in its step". The mark's text is made when the hook is entered, so the crash
// handler only copies bytes (async-signal-safe).
#include <string>

#include "plait/sdk/error.hpp"

namespace plait {

class InPluginHook {
 public:
  InPluginHook(const std::string& plugin, const char* hook);
  ~InPluginHook();
  InPluginHook(const InPluginHook&) = delete;
  InPluginHook& operator=(const InPluginHook&) = delete;

 private:
  char previous_[256];  // the enclosing mark, restored on exit (no allocation per hook call)
};

// "inside plugin 'x', in its update" while this thread is in a marked hook; "" outside.
const char* current_plugin_hook();

// The hint of an error that is a plugin's own fault, not the config's.
inline std::string plugin_fault_hint(const std::string& plugin) {
  return concat("this is a fault of the plugin '", plugin, "', not of the config: report it to its authors");
}

}  // namespace plait
