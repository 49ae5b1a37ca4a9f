#include "debug/plugin_hook.hpp"

#include <cstdio>
#include <cstring>

namespace plait {
namespace {

// Per thread: a plugin's hook may run on the async checkpoint writer's thread too.
thread_local char t_hook[256] = "";

}  // namespace

InPluginHook::InPluginHook(const std::string& plugin, const char* hook) {
  std::memcpy(previous_, t_hook, sizeof(previous_));
  std::snprintf(t_hook, sizeof(t_hook), "inside plugin '%s', in its %s", plugin.c_str(), hook);
}

InPluginHook::~InPluginHook() { std::memcpy(t_hook, previous_, sizeof(previous_)); }

const char* current_plugin_hook() { return t_hook; }

}  // namespace plait
