#pragma once
// A chosen plugin, made from the registry, with what it was handed: its logger, its
// metrics and its context outlive it, since the plugin may keep pointers to them.
#include <memory>
#include <string>

#include "log/logging.hpp"
#include "memory/tracking_allocator.hpp"
#include "plugins/plugin_registry.hpp"
#include "metrics/metrics_writer.hpp"

namespace plait {

template <class Interface>
struct PluginInstance {
  std::shared_ptr<Interface> plugin;
  std::unique_ptr<Logger> log;
  std::unique_ptr<Metrics> metrics;
  PluginContext context;
};

template <class Interface>
PluginInstance<Interface> make_plugin(const PluginRegistry& registry, const Options& own_table,
                                      const std::string& name, StepMetrics& step_metrics, int rank = 0,
                                      int world_size = 1) {
  PluginInstance<Interface> p;
  p.plugin = std::static_pointer_cast<Interface>(registry.create(*registry.find(name)));
  p.log = make_logger("plugin." + name);
  p.metrics = step_metrics.for_plugin(name);
  p.context = {.plugin_name = name,
               .options = &own_table,
               .log = p.log.get(),
               .metrics = p.metrics.get(),
               .rank = rank,
               .world_size = world_size,
               .memory = tracking_memory_domain()};
  return p;
}

}  // namespace plait
