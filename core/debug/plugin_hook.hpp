#pragma once
// Which plugin hook a thread is in. The core marks every call it makes into a plugin's
// hook, so that what goes wrong in there is the plugin's to answer for, by name: an
// exception that is not one of plait's own errors comes out as "plugin 'x' failed in its
// update: ...", and a crash's last words (and its flight record) say "inside plugin 'x',
// in its update". The mark's text is made when the hook is entered, so the crash handler
// only copies bytes (async-signal-safe).
#include <string>
#include <utility>

#include "plait/sdk/error.hpp"

namespace plait {

class InPluginHook {
 public:
  InPluginHook(const std::string& plugin, const char* hook);
  ~InPluginHook();
  InPluginHook(const InPluginHook&) = delete;
  InPluginHook& operator=(const InPluginHook&) = delete;

 private:
  std::string previous_;
};

// "inside plugin 'x', in its update" while this thread is in a marked hook; "" outside.
const char* current_plugin_hook();

// Runs `fn` (a call into plugin `plugin`'s hook `hook`) under the mark. A plait::Error
// passes as it was said (a plugin's refusal names the user's place itself); any other
// exception is the plugin's fault, and says so.
template <class Fn>
auto call_plugin(const std::string& plugin, const char* hook, Fn&& fn) -> decltype(fn()) {
  const InPluginHook mark(plugin, hook);
  try {
    return std::forward<Fn>(fn)();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(concat("plugin '", plugin, "' failed in its ", hook, ": ", e.what()),
                concat("this is a fault of the plugin '", plugin, "', not of the config: report it to its authors"));
  }
}

}  // namespace plait
