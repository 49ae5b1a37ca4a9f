#include "memory/tracking_allocator.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

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
constexpr std::size_t kAlignment = 64;  // c10's
constexpr std::size_t kHeader = kAlignment;
struct Header {
  int64_t bytes;
  int64_t host;
  ThreadWindow* window;  // the allocating thread's, when it had one open (device bytes only)
  uint64_t window_id;
  void* block;  // what malloc returned
};
static_assert(sizeof(Header) <= kHeader);

// Blocks come from malloc and are aligned here, not by posix_memalign (c10's way): glibc
// serves an aligned request of n bytes from a free chunk of n plus the alignment only, so
// a block a step frees could never serve the same request in the next step, and kept
// memory (freed_memory.hpp) would still fault in each step's buffers anew.
void* allocate_block(std::size_t n) {
  void* block = std::malloc(n + kHeader + kAlignment);
  TORCH_CHECK_WITH(OutOfMemoryError, block != nullptr, "the host could not allocate ", n, " bytes");
  return block;
}
// The header's place in `block`: kHeader before the first aligned address past a header.
char* header_place(void* block) {
  const auto data = (reinterpret_cast<std::uintptr_t>(block) + kHeader + kAlignment - 1) & ~(kAlignment - 1);
  return reinterpret_cast<char*>(data - kHeader);
}

void release(void* data) {
  char* raw = static_cast<char*>(data) - kHeader;
  Header h{};
  std::memcpy(&h, raw, sizeof(h));
  (h.host ? g_host : g_device).current.fetch_sub(h.bytes);
  if (h.window != nullptr && h.window->id.load(std::memory_order_relaxed) == h.window_id) {
    h.window->held.fetch_sub(h.bytes, std::memory_order_relaxed);
  }
  std::free(h.block);
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

class TrackingAllocator final : public c10::Allocator {
 public:
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
    void* block = allocate_block(n);
    char* raw = header_place(block);
    Header h{bytes, host ? 1 : 0, nullptr, 0, block};
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
    static TrackingAllocator allocator;
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
