#pragma once
// The core's accounting of device-to-host reads: every read the core makes in a step
// (the optimizer step's norms and loss, the report's gathered figures, the divergence
// guard's flags) goes through one reader, which counts them, so that the hot path can
// be held to one read per step outside logged steps (metrics `host_reads_by_step`).
#include <cstdint>

#include "plait/sdk/host_read.hpp"

namespace plait {

class CountingReader final : public HostReader {
 public:
  at::Tensor read(const at::Tensor& values, const char* what) override;
  // Reads since the last call.
  int64_t take();

 private:
  int64_t count_ = 0;
};

}  // namespace plait
