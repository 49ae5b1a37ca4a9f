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

TEST_CASE("allocations inside a host scope are booked as host memory, and freed from either domain", "[memory]") {
  install_tracking_allocator();
  const MemoryStats before = cpu_memory_stats();
  at::Tensor host;
  {
    HostMemoryScope scope(tracking_memory_domain());
    host = at::empty({256, 1024}, at::kFloat);  // 1 MiB
    at::Tensor nested;
    {
      HostMemoryScope again(tracking_memory_domain());
      nested = at::empty({1024}, at::kFloat);
    }
    CHECK(cpu_memory_stats().host_current_bytes - before.host_current_bytes == 1024 * 1024 + 4096);
  }
  at::Tensor device = at::empty({512}, at::kFloat);
  MemoryStats mid = cpu_memory_stats();
  CHECK(mid.host_current_bytes - before.host_current_bytes == 1024 * 1024);
  CHECK(mid.current_bytes - before.current_bytes == 2048);
  host.reset();  // freed outside the scope: still taken off the host books
  CHECK(cpu_memory_stats().host_current_bytes == before.host_current_bytes);
}

TEST_CASE("a device memory budget refuses the allocation past it, not host allocations", "[memory]") {
  install_tracking_allocator();
  const int64_t in_use = cpu_memory_stats().current_bytes;
  set_device_memory_limit(in_use + 8 * 1024 * 1024);
  CHECK_NOTHROW(at::empty({1024, 1024}, at::kFloat));  // 4 MiB fits
  try {
    at::Tensor t = at::empty({4 * 1024, 1024}, at::kFloat);  // 16 MiB does not
    FAIL("the budget let 16 MiB through");
  } catch (const c10::OutOfMemoryError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("train.memory_limit_mb"));
  }
  CHECK(device_memory_limit_hit());
  {
    HostMemoryScope scope(tracking_memory_domain());
    CHECK_NOTHROW(at::empty({4 * 1024, 1024}, at::kFloat));  // host memory is not the device's budget
  }
  set_device_memory_limit(0);
  CHECK_FALSE(device_memory_limit_hit());
  CHECK_NOTHROW(at::empty({4 * 1024, 1024}, at::kFloat));
}
