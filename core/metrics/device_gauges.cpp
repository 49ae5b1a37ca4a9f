#include "metrics/device_gauges.hpp"

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

class PrefixedDeviceMetrics final : public DeviceMetrics {
 public:
  PrefixedDeviceMetrics(DeviceGauges& sink, std::string prefix) : sink_(sink), prefix_(std::move(prefix)) {}
  void gauge(std::string_view name, const at::Tensor& value) override {
    const std::string key = prefix_ + "." + std::string(name);
    PLAIT_CHECK(value.numel() == 1 && at::isFloatingType(value.scalar_type()),
                concat("plugin '", prefix_, "' set the device gauge '", name, "' to a ", value.scalar_type(),
                       " tensor of ", value.numel(), " elements"),
                "a device gauge is one floating-point element (a 0-dim tensor, say)");
    sink_.set(key, value);
  }

 private:
  DeviceGauges& sink_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<DeviceMetrics> DeviceGauges::for_plugin(const std::string& plugin) {
  return std::make_unique<PrefixedDeviceMetrics>(*this, plugin);
}

void DeviceGauges::set(const std::string& key, const at::Tensor& value) {
  const at::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex_);
  pending_[key] = value.detach().reshape({});
}

DeviceGauges::Taken DeviceGauges::take(const at::Device& device) {
  std::map<std::string, at::Tensor> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_);
  }
  Taken out;
  if (pending.empty()) return out;
  std::vector<at::Tensor> values;
  for (auto& [key, value] : pending) {
    out.keys.push_back(key);
    values.push_back(value.to(device, at::kDouble));
  }
  out.values = at::stack(values);
  return out;
}

}  // namespace plait
