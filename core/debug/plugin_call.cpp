#include "debug/plugin_call.hpp"

#include <exception>

#include <c10/util/Exception.h>

#include "plait/sdk/error.hpp"

namespace plait {

void rethrow_from_plugin(const std::string& plugin, const char* hook) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(concat("plugin '", plugin, "' failed in its ", hook, ": ", e.what()), plugin_fault_hint(plugin));
  }
}

}  // namespace plait
