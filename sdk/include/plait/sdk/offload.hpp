#pragma once
// Which model state lives in host memory, and where its optimizer update runs. A data
// plugin with the `offload` capability asks the offload plugin where each kind of state
// goes and allocates host state through it, so host bytes are counted as host bytes.
#include <functional>

#include <ATen/core/Tensor.h>

#include "plait/sdk/context.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

enum class StateRole {
  param,      // the working (compute-dtype) parameter shard, stage 3 only
  grad,       // the reduced gradient shard
  optimizer,  // fp32 master weights and the AdamW moments
};

class PLAIT_SDK_VISIBLE Offload : public Plugin {
 public:
  using Interface = Offload;
  static constexpr const char* kKind = "offload";
  // Once, before the data plugin's setup: the plugin's own options and the memory books.
  virtual void configure(const PluginContext& context) = 0;
  // True when state of this role lives in host memory (and its update runs there).
  virtual bool offloads(StateRole role) const = 0;
  // A host copy of `tensor` (pinned when it is on a GPU), counted as host memory.
  virtual at::Tensor to_host(const at::Tensor& tensor) = 0;
  // Runs `work` (the host optimizer update) with its allocations counted as host memory.
  virtual void run_on_host(const std::function<void()>& work) = 0;
};

}  // namespace plait
