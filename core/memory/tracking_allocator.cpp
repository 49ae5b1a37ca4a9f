#include "memory/tracking_allocator.hpp"

#include <atomic>
#include <cstring>
#include <mutex>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};

void add(int64_t bytes) {
  const int64_t now = g_current.fetch_add(bytes) + bytes;
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

// The byte count lives in a header just before the data. The data pointer is also the
// deleter's context, as LibTorch's raw_allocate() callers (oneDNN scratch space) require.
constexpr std::size_t kHeader = 64;  // keeps c10's 64-byte alignment
c10::DeleterFnPtr g_base_deleter = nullptr;

void release(void* data) {
  char* raw = static_cast<char*>(data) - kHeader;
  int64_t bytes = 0;
  std::memcpy(&bytes, raw, sizeof(bytes));
  g_current.fetch_sub(bytes);
  g_base_deleter(raw);
}

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* base) : base_(base) { g_base_deleter = base->raw_deleter(); }

  c10::DataPtr allocate(size_t n) override {
    char* raw = static_cast<char*>(base_->raw_allocate(n + kHeader));
    const auto bytes = static_cast<int64_t>(n);
    std::memcpy(raw, &bytes, sizeof(bytes));
    add(bytes);
    void* data = raw + kHeader;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* base_;
};

}  // namespace

void install_tracking_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    PLAIT_CHECK(base->raw_deleter() != nullptr, "the process's CPU allocator has no raw deleter to wrap",
                "plait counts memory by wrapping LibTorch's default CPU allocator; do not replace it");
    static TrackingAllocator allocator(base);
    c10::SetCPUAllocator(&allocator, /*priority=*/100);
  });
}

MemoryStats cpu_memory_stats() { return {g_current.load(), g_peak.load()}; }

void reset_cpu_memory_peak() { g_peak.store(g_current.load()); }

}  // namespace plait
