#pragma once
// Counts every byte LibTorch allocates on the CPU, so peak memory is measured rather
// than estimated: LibTorch's CPU allocator, replaced once per process by one that books
// each block it takes from malloc.
// Bytes are booked in one of two domains: host (what a thread allocates inside a
// HostMemoryScope: offloaded model state) and device (everything else; on a CPU-only
// run the "device" is the CPU). A budget on device bytes turns an allocation past it
// into an out-of-memory error, as a GPU of that size would.
#include <cstdint>

#include "plait/sdk/context.hpp"

namespace plait {

struct MemoryStats {
  int64_t current_bytes = 0;  // device domain
  int64_t peak_bytes = 0;
  int64_t host_current_bytes = 0;
  int64_t host_peak_bytes = 0;
  // An accelerator's caching allocator holds more than it hands out; the CPU reserves
  // nothing beyond what it allocates, so there these equal the device figures.
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;
};

// Idempotent. Tensors allocated before it are simply not counted.
void install_tracking_allocator();
MemoryStats cpu_memory_stats();
// This thread's allocation window (one at a time): the device-domain bytes it allocates
// while the window is open that are still alive, wherever they are freed.
void open_allocation_window();
int64_t allocation_window_bytes();
void close_allocation_window();
// On a rank whose device is an accelerator every CPU allocation is host memory.
void book_cpu_as_host(bool all_host);
// Starts a new peak window at the current allocation.
void reset_cpu_memory_peak();
// The device-domain budget in bytes; 0 removes it.
void set_device_memory_limit(int64_t bytes);
// True once an allocation was refused for the budget (the error may arrive wrapped).
bool device_memory_limit_hit();
// The domain switch plugins receive in their context.
MemoryDomain* tracking_memory_domain();

}  // namespace plait
