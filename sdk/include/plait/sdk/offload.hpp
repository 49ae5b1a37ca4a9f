#pragma once
// Which model state lives in host memory, and where its update runs. A data plugin
// that has the `offload` capability asks the offload plugin where to put each tensor.
#include <ATen/core/Tensor.h>

#include "plait/sdk/context.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

enum class StateRole { master_param, grad, optimizer_state, param };

class PLAIT_SDK_VISIBLE Offload : public Plugin {
 public:
  using Interface = Offload;
  static constexpr const char* kKind = "offload";
  virtual void configure(PluginContext& context) {}
  // Where a tensor of this role should live: a host tensor (pinned when the device is a GPU)
  // or the tensor itself when this role stays on the device.
  virtual at::Tensor place(const at::Tensor& tensor, StateRole role) = 0;
  // True when the optimizer update of offloaded state runs on the host.
  virtual bool update_on_host() const = 0;
};

}  // namespace plait
