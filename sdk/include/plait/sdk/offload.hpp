#pragma once
// Which model state lives in host memory, and where its optimizer update runs. A data
// plugin with the `offload` capability asks the offload plugin where each kind of state
// goes and allocates host state through it, so host bytes are counted as host bytes
// (through the memory books of its context, PluginContext::memory). The core configures
// it before the data plugin's setup, so offloads() answers from the first call.
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "plait/sdk/plugin.hpp"

namespace plait {

enum class StateRole {
  param,      // the working (compute-dtype) parameter shard, stage 3 only
  grad,       // the reduced gradient shard
  optimizer,  // fp32 master weights and the AdamW moments
};

// A host-device copy that may still be running on the offload plugin's copy stream.
class PLAIT_SDK_VISIBLE CopyInFlight {
 public:
  virtual ~CopyInFlight() = default;
  // Before the device reads the copy's target (or writes its source): the current stream
  // waits for the copy; the host does not.
  virtual void before_device_use() = 0;
  // Before the host reads the copy's target (or writes its source): the host waits.
  virtual void before_host_use() = 0;
};

// API 12.10: work queued behind the offload plugin's copies. on_copy_stream() runs `issue`
// with the plugin's copy stream for `device` current (on a GPU; elsewhere it just runs
// it), so what `issue` enqueues (a copy, then a collective that reads its target) follows
// the copies there while the caller's stream goes on: a prefetched gather of offloaded
// parameters overlaps the compute before it instead of holding it until the upload ends.
// Without it, the caller's stream waits for each copy (CopyInFlight::before_device_use).
class PLAIT_SDK_VISIBLE CopyStreamIssue {
 public:
  static constexpr const char* kExtension = "plait.offload.copy_stream_issue/1";
  virtual ~CopyStreamIssue() = default;
  virtual void on_copy_stream(const c10::Device& device, const std::function<void()>& issue) = 0;
};

class PLAIT_SDK_VISIBLE Offload : public Plugin {
 public:
  using Interface = Offload;
  static constexpr const char* kKind = "offload";
  // True when state of this role lives in host memory (and its update runs there).
  virtual bool offloads(StateRole role) const = 0;
  // A host copy of `tensor` (pinned when it is on a GPU), counted as host memory.
  virtual at::Tensor to_host(const at::Tensor& tensor) = 0;
  // Runs `work` (the host optimizer update) with its allocations counted as host memory.
  virtual void run_on_host(const std::function<void()>& work) = 0;
  // Copies `from` into `to` (same shape and type; one in host memory, one on the device).
  // Between a GPU and pinned host memory it runs on the plugin's copy stream, after the
  // work queued so far on the current stream, and returns at once, so the copy overlaps
  // what the device and the host do next; otherwise it copies before returning. Either
  // way the caller says, through the result, when it uses either tensor again.
  virtual std::unique_ptr<CopyInFlight> copy(const at::Tensor& to, const at::Tensor& from) = 0;
};

}  // namespace plait
