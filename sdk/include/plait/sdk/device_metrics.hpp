#pragma once
// Per-step figures that live on the device (a norm, a distance, an error), reported
// without a device-to-host read of their own (API 12.1). The core reads them together
// with the step's one read of the gradient norm and the loss (data_parallel.hpp), and
// writes each to metrics.jsonl as "<plugin>.<name>", like Metrics::gauge. A value set
// before the optimizer step (in setup, the microbatch hooks, or grad_norm) is reported
// with that step; one set after the read (in update or discard_gradients) with the next.
// Reached through PluginContext::device_metrics; null for comm plugins, and for plugins
// of API 12.0, whose context ends before the field.
#include <string_view>

#include "plait/sdk/version.hpp"

namespace at {
class Tensor;
}

namespace plait {

class PLAIT_SDK_VISIBLE DeviceMetrics {
 public:
  virtual ~DeviceMetrics() = default;
  // `value`: one element of a floating dtype, on the compute device; the last value set
  // under a name before the read is the one reported.
  virtual void gauge(std::string_view name, const at::Tensor& value) = 0;
};

}  // namespace plait
