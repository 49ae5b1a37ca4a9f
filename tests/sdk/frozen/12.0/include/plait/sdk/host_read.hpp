#pragma once
// Reads device values into host memory. Every such read makes the host wait for the
// device, so the core hands the optimizer step a reader that counts them (metrics
// `host_reads_by_step`), and the hot path keeps to one: the step's norms and loss
// figures, read together.
#include <ATen/core/Tensor.h>

#include "plait/sdk/version.hpp"

namespace plait {

class PLAIT_SDK_VISIBLE HostReader {
 public:
  virtual ~HostReader() = default;
  // A contiguous host copy of `values`; `what` names the read in the core's accounting.
  virtual at::Tensor read(const at::Tensor& values, const char* what) = 0;
};

}  // namespace plait
