#pragma once
// A chosen plugin, made from the registry and configured: the one way the core makes a
// plugin of any kind. What the plugin is handed (its context, logger and metrics) lives
// here beside it, on the heap so that its address survives moves of the instance, and
// is destroyed after it, since the plugin keeps pointers to it.
#include <memory>
#include <string>

#include "loader/plugin_registry.hpp"
#include "log/logging.hpp"
#include "memory/tracking_allocator.hpp"
#include "metrics/device_gauges.hpp"
#include "metrics/metrics_writer.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

template <class Interface>
struct PluginInstance {
  std::unique_ptr<Logger> log;
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<DeviceMetrics> device_metrics;
  std::unique_ptr<PluginContext> context;
  std::shared_ptr<Interface> plugin;  // declared last: destroyed first

  explicit operator bool() const { return plugin != nullptr; }
};

struct PluginPlace {
  int rank = 0;
  int world_size = 1;
};

// Where a plugin's figures go; null: it gets none (comm plugins, whose operations the
// core counts; plugins made for the checks before launch).
struct PluginSinks {
  StepMetrics* metrics = nullptr;
  DeviceGauges* device = nullptr;
};

// The plugin `name` of the kind `Interface`, configured with its own table.
// A plait::Error the plugin throws while configuring comes out as it was said (its message
// starts at the user's place); any other exception comes out naming the plugin.
template <class Interface>
PluginInstance<Interface> make_plugin(const PluginRegistry& registry, const Options& own_table, const std::string& name,
                                      PluginSinks sinks, PluginPlace place = {}) {
  const PluginRecord* record = registry.find(name);
  PLAIT_CHECK(record != nullptr, concat("no plugin named '", name, "' was found"), "`plait plugins` lists what was found");
  PluginInstance<Interface> p;
  p.log = make_logger("plugin." + name);
  if (sinks.metrics != nullptr) p.metrics = sinks.metrics->for_plugin(name);
  if (sinks.device != nullptr) p.device_metrics = sinks.device->for_plugin(name);
  p.context = std::make_unique<PluginContext>(PluginContext{.plugin_name = name,
                                                            .options = &own_table,
                                                            .log = p.log.get(),
                                                            .metrics = p.metrics.get(),
                                                            .rank = place.rank,
                                                            .world_size = place.world_size,
                                                            .memory = tracking_memory_domain(),
                                                            .device_metrics = p.device_metrics.get()});
  p.plugin = registry.make<Interface>(*record);
  try {
    p.plugin->configure(*p.context);
  } catch (const Error& e) {
    // A copy made here: the plugin's exception must not outlive its library's objects.
    throw Error(e.what(), e.hint(), e.origin());
  } catch (const std::exception& e) {
    throw Error(concat("plugin '", name, "' failed while reading its options: ", e.what()),
                concat("this is a fault of the plugin (", record->path, ")"));
  }
  return p;
}

}  // namespace plait
