#pragma once
// Host-device copies on a stream of their own, device-generic (c10's virtual guard):
// on a GPU between pinned host memory and the device they run beside compute; anywhere
// else they are done at once.
#include <functional>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

#include "plait/sdk/offload.hpp"

namespace plait::offload {

class CopyStream {
 public:
  std::unique_ptr<CopyInFlight> copy(const at::Tensor& to, const at::Tensor& from);
  // Runs `issue` with the copy stream current on a GPU (CopyStreamIssue); elsewhere it
  // just runs it.
  void on_copy_stream(const c10::Device& device, const std::function<void()>& issue);

 private:
  c10::Stream stream_for(const c10::Device& device);

  std::optional<c10::Stream> stream_;  // taken from the device's pool at the first copy
};

}  // namespace plait::offload
