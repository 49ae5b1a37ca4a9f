#pragma once
// A rank's memory, read where its tensors live. On the CPU: the tracking allocator's
// device and host domains. On an accelerator: that device's caching allocator
// statistics (allocated and reserved bytes, as torch.cuda.memory_stats reports them),
// with every CPU byte booked as host memory (offloaded state, pinned staging, the
// loader). Reading them is a host call: it never waits for the device.
#include <cstdint>

#include <c10/core/Device.h>

#include "memory/tracking_allocator.hpp"

namespace plait {

// Once per rank, before its model is built: on an accelerator, CPU bytes become host.
void start_rank_memory(const c10::Device& device);
MemoryStats rank_memory(const c10::Device& device);
// The device bytes a piece of work (a forward) allocated since this was made and still
// holds. On the CPU, the calling thread's allocations in the meantime that are still
// alive: not other threads' (gloo's buffers), nor older tensors freed meanwhile. On an
// accelerator, the allocator's growth: its every stream is the rank's own work.
class HeldSince {
 public:
  explicit HeldSince(const c10::Device& device);
  ~HeldSince();
  HeldSince(const HeldSince&) = delete;
  HeldSince& operator=(const HeldSince&) = delete;
  int64_t bytes() const;

 private:
  c10::Device device_;
  int64_t start_ = 0;  // an accelerator's allocated bytes when it began
};
// A new peak window (each step's peak) on the device and in the CPU tracker.
void reset_rank_memory_peak(const c10::Device& device);

}  // namespace plait
