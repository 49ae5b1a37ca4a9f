#include "memory/tracking_allocator.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

struct Books {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};

  void add(int64_t bytes) {
    const int64_t now = current.fetch_add(bytes) + bytes;
    int64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
};

Books g_device, g_host;

// A thread's open allocation window: the device bytes it allocated since the window
// opened that are still alive, wherever they are freed. What a forward holds is what it
// allocated and kept, not the process's growth meanwhile, which counts gloo's worker
// threads' buffers and earlier tensors other threads free (a send's, once it completes).
// Never deleted: an allocation may outlive its thread.
struct ThreadWindow {
  std::atomic<uint64_t> id{0};  // the open window's (0: none)
  std::atomic<int64_t> held{0};
};
std::atomic<uint64_t> g_next_window{1};

ThreadWindow* this_thread_window() {
  thread_local auto* window = new ThreadWindow;
  return window;
}
std::atomic<int64_t> g_limit{0};
std::atomic<bool> g_limit_hit{false};
thread_local bool t_host = false;
std::atomic<bool> g_all_host{false};

bool booked_as_host() { return t_host || g_all_host.load(std::memory_order_relaxed); }

// The byte count and domain live in a header just before the data. The data pointer is
// also the deleter's context, as LibTorch's raw_allocate() callers (oneDNN scratch
// space) require.
constexpr std::size_t kHeader = 64;  // keeps c10's 64-byte alignment
struct Header {
  int64_t bytes;
  int64_t host;
  ThreadWindow* window;  // the allocating thread's, when it had one open (device bytes only)
  uint64_t window_id;
};
static_assert(sizeof(Header) <= kHeader);
c10::DeleterFnPtr g_base_deleter = nullptr;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Large blocks a step frees, kept for the next allocation of the same size. glibc hands a
// block above its mmap threshold back to the kernel when it is freed, so a buffer a step
// allocates anew (ZeRO-3's and FSDP's gathered groups, activations) would be mapped and
// zeroed again, a page fault every 4 KiB: 16% of a 124M ZeRO-3 rank's time on 2 cores.
// A step allocates the same sizes every time, so a block is found by its exact size. The
// cache holds at most half of the most in use since the peak was last reset (a step's
// peak, in a run); a block that does not fit goes back to the C library. Off under a
// sanitizer, whose allocator must see every free to find a use after it.
std::atomic<bool> g_cache_blocks{false};

class BlockCache {
 public:
  static constexpr std::size_t kSmallest = 1 << 20;  // below it glibc's heap keeps them

  char* take(std::size_t raw_bytes) {
    if (kSanitized || raw_bytes < kSmallest || !g_cache_blocks.load(std::memory_order_relaxed)) return nullptr;
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(raw_bytes);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    char* raw = it->second.back();
    it->second.pop_back();
    held_ -= raw_bytes;
    return raw;
  }

  // False: the caller frees it.
  bool keep(char* raw, std::size_t raw_bytes) {
    if (kSanitized || raw_bytes < kSmallest || !g_cache_blocks.load(std::memory_order_relaxed)) return false;
    const int64_t in_use_peak = g_device.peak.load(std::memory_order_relaxed) + g_host.peak.load(std::memory_order_relaxed);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (held_ + raw_bytes > static_cast<std::size_t>(in_use_peak / 2)) return false;
    blocks_[raw_bytes].push_back(raw);
    held_ += raw_bytes;
    return true;
  }

  // Hands every kept block back to the C library.
  void drain() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, raws] : blocks_) {
      for (char* raw : raws) g_base_deleter(raw);
    }
    blocks_.clear();
    held_ = 0;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<char*>> blocks_;
  std::size_t held_ = 0;
};

BlockCache& block_cache() {
  static auto* cache = new BlockCache;  // never destroyed: tensors may be freed at exit
  return *cache;
}

void release(void* data) {
  char* raw = static_cast<char*>(data) - kHeader;
  Header h{};
  std::memcpy(&h, raw, sizeof(h));
  (h.host ? g_host : g_device).current.fetch_sub(h.bytes);
  if (h.window != nullptr && h.window->id.load(std::memory_order_relaxed) == h.window_id) {
    h.window->held.fetch_sub(h.bytes, std::memory_order_relaxed);
  }
  if (!block_cache().keep(raw, static_cast<std::size_t>(h.bytes) + kHeader)) g_base_deleter(raw);
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* base) : base_(base) { g_base_deleter = base->raw_deleter(); }

  c10::DataPtr allocate(size_t n) override {
    const auto bytes = static_cast<int64_t>(n);
    const int64_t limit = g_limit.load();
    const bool host = booked_as_host();
    if (!host && limit > 0 && g_device.current.load() + bytes > limit) {
      g_limit_hit = true;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "plait device memory budget exceeded: allocating ", mib(bytes),
                       " MiB with ", mib(g_device.current.load()), " MiB in use would pass the budget of ", mib(limit),
                       " MiB (train.memory_limit_mb)");
    }
    char* raw = block_cache().take(n + kHeader);
    if (raw == nullptr) raw = static_cast<char*>(base_->raw_allocate(n + kHeader));
    Header h{bytes, host ? 1 : 0, nullptr, 0};
    if (ThreadWindow* w = this_thread_window(); !host && w->id.load(std::memory_order_relaxed) != 0) {
      h.window = w;
      h.window_id = w->id.load(std::memory_order_relaxed);
      w->held.fetch_add(bytes, std::memory_order_relaxed);
    }
    std::memcpy(raw, &h, sizeof(h));
    (host ? g_host : g_device).add(bytes);
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

class ThreadMemoryDomain final : public MemoryDomain {
 public:
  bool set_host(bool host) override {
    const bool previous = t_host;
    t_host = host;
    return previous;
  }
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

MemoryStats cpu_memory_stats() {
  const int64_t current = g_device.current.load(), peak = g_device.peak.load();
  return {current, peak, g_host.current.load(), g_host.peak.load(), current, peak};
}

void open_allocation_window() {
  ThreadWindow* w = this_thread_window();
  w->held.store(0, std::memory_order_relaxed);
  w->id.store(g_next_window.fetch_add(1), std::memory_order_relaxed);
}

int64_t allocation_window_bytes() { return this_thread_window()->held.load(std::memory_order_relaxed); }

void close_allocation_window() { this_thread_window()->id.store(0, std::memory_order_relaxed); }

void book_cpu_as_host(bool all_host) { g_all_host = all_host; }

bool freed_blocks_can_be_kept() { return !kSanitized; }

void cache_freed_blocks(bool on) {
  g_cache_blocks = on;
  if (!on) block_cache().drain();
}

void reset_cpu_memory_peak() {
  g_device.peak.store(g_device.current.load());
  g_host.peak.store(g_host.current.load());
}

void set_device_memory_limit(int64_t bytes) {
  g_limit = bytes;
  g_limit_hit = false;
}

bool device_memory_limit_hit() { return g_limit_hit.load(); }

MemoryDomain* tracking_memory_domain() {
  static ThreadMemoryDomain domain;
  return &domain;
}

}  // namespace plait
