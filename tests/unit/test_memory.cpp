#include <catch2/catch.hpp>

#include "memory/tracking_allocator.hpp"

using namespace plait;

TEST_CASE("the tracking allocator counts CPU tensor bytes and the peak", "[memory]") {
  install_tracking_allocator();
  install_tracking_allocator();  // idempotent
  const MemoryStats before = cpu_memory_stats();
  reset_cpu_memory_peak();
  {
    at::Tensor big = at::empty({1024, 1024}, at::kFloat);  // 4 MiB
    CHECK(cpu_memory_stats().current_bytes - before.current_bytes == 4 * 1024 * 1024);
  }
  const MemoryStats after = cpu_memory_stats();
  CHECK(after.current_bytes == before.current_bytes);
  CHECK(after.peak_bytes - before.current_bytes >= 4 * 1024 * 1024);
  reset_cpu_memory_peak();
  CHECK(cpu_memory_stats().peak_bytes == after.current_bytes);
}

TEST_CASE("oneDNN-style raw allocations through the tracking allocator work", "[memory]") {
  install_tracking_allocator();
  // gelu on CPU asks the allocator for raw scratch memory (data pointer == context).
  at::Tensor x = at::randn({64, 256}, at::kFloat);
  CHECK(at::gelu(x).sizes() == x.sizes());
}
