#pragma once
// A call the core makes into a plugin's hook, marked (debug/plugin_hook.hpp) so that what
// goes wrong in there is the plugin's to answer for, by name.
#include <string>
#include <utility>

#include "debug/plugin_hook.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

// The exception in flight, thrown from a call into `plugin`'s `hook`: a plait::Error as it
// was said (a plugin's refusal names the user's place itself), LibTorch's own errors as
// they are (the memory budget, an allocation: the training loop puts them in words), any
// other exception as the plugin's fault, naming it and the hook.
[[noreturn]] void rethrow_from_plugin(const std::string& plugin, const char* hook);

template <class Fn>
auto call_plugin(const std::string& plugin, const char* hook, Fn&& fn) -> decltype(fn()) {
  const InPluginHook mark(plugin, hook);
  try {
    return std::forward<Fn>(fn)();
  } catch (...) {
    rethrow_from_plugin(plugin, hook);
  }
}

// The same, for a plugin that may be unloaded before its exception is caught (one made for
// a check, destroyed with the stack the exception unwinds): a plait::Error comes out as a
// copy the core made, since the thrown object's type lives in the plugin's library.
template <class Fn>
auto call_detached_plugin(const std::string& plugin, const char* hook, Fn&& fn) -> decltype(fn()) {
  try {
    return call_plugin(plugin, hook, std::forward<Fn>(fn));
  } catch (const Error& e) {
    throw Error(e.what(), e.hint(), e.origin());
  }
}

}  // namespace plait
