#pragma once
// The core's side of the SDK's DeviceMetrics (API 12.1): figures plugins leave on the
// device, kept until the step's one device-to-host read takes them along with the
// gradient norm and the loss (train/train_step.cpp). Keyed "<plugin>.<name>", as
// StepMetrics keys what plugins report from the host.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plait/sdk/device_metrics.hpp"

namespace plait {

class DeviceGauges {
 public:
  // A DeviceMetrics that prefixes its names with `plugin`.
  std::unique_ptr<DeviceMetrics> for_plugin(const std::string& plugin);
  // Keeps the latest value per key until the next take().
  void set(const std::string& key, const at::Tensor& value);

  struct Taken {
    std::vector<std::string> keys;
    at::Tensor values;  // float64 on the step's device, one per key; undefined when none
  };
  // What was set since the last take, in key order, and forgets it.
  Taken take(const at::Device& device);

 private:
  std::mutex mutex_;
  std::map<std::string, at::Tensor> pending_;
};

}  // namespace plait
