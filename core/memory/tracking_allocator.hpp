#pragma once
// Counts every byte LibTorch allocates on the CPU, so peak memory is measured rather
// than estimated: a wrapper around the default CPU allocator, installed once per process.
#include <cstdint>

namespace plait {

struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
};

// Idempotent. Tensors allocated before it are simply not counted.
void install_tracking_allocator();
MemoryStats cpu_memory_stats();
// Starts a new peak window at the current allocation.
void reset_cpu_memory_peak();

}  // namespace plait
