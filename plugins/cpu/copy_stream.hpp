#pragma once
// Host-device copies on a stream of their own, device-generic (c10's virtual guard):
// on a GPU between pinned host memory and the device they run beside compute; anywhere
// else they are done at once.
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

#include "plait/sdk/offload.hpp"

namespace plait::offload {

class CopyStream {
 public:
  std::unique_ptr<CopyInFlight> copy(const at::Tensor& to, const at::Tensor& from);

 private:
  std::optional<c10::Stream> stream_;  // taken from the device's pool at the first copy
};

}  // namespace plait::offload
