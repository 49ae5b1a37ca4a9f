#include "memory/rank_memory.hpp"

#include <c10/core/CachingDeviceAllocator.h>

namespace plait {
namespace {

constexpr auto kAggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);

// The meta device (the planner's measured rank) allocates nothing: the CPU's books stand.
bool on_accelerator(const c10::Device& device) {
  return device.type() != c10::DeviceType::CPU && device.type() != c10::DeviceType::Meta;
}

}  // namespace

void start_rank_memory(const c10::Device& device) { book_cpu_as_host(on_accelerator(device)); }

MemoryStats rank_memory(const c10::Device& device) {
  MemoryStats stats = cpu_memory_stats();
  if (!on_accelerator(device)) return stats;
  const auto device_stats = c10::getDeviceAllocator(device.type())->getDeviceStats(device.index());
  const auto& allocated = device_stats.allocated_bytes[kAggregate];
  const auto& reserved = device_stats.reserved_bytes[kAggregate];
  stats.current_bytes = allocated.current;
  stats.peak_bytes = allocated.peak;
  stats.reserved_bytes = reserved.current;
  stats.peak_reserved_bytes = reserved.peak;
  return stats;
}

HeldSince::HeldSince(const c10::Device& device) : device_(device) {
  if (on_accelerator(device_)) {
    start_ = rank_memory(device_).current_bytes;
  } else {
    open_allocation_window();
  }
}

HeldSince::~HeldSince() {
  if (!on_accelerator(device_)) close_allocation_window();
}

int64_t HeldSince::bytes() const {
  return on_accelerator(device_) ? rank_memory(device_).current_bytes - start_ : allocation_window_bytes();
}

void reset_rank_memory_peak(const c10::Device& device) {
  reset_cpu_memory_peak();
  if (on_accelerator(device)) c10::getDeviceAllocator(device.type())->resetPeakStats(device.index());
}

}  // namespace plait
