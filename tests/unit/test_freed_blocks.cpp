// [train] cache_freed_blocks: the tracking allocator keeps a large block a step frees for
// the next allocation of its size, so the buffer a step allocates again (a gathered
// group, an activation) finds its pages mapped instead of faulting each 4 KiB in anew.
#include <sys/resource.h>

#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "memory/tracking_allocator.hpp"

using namespace plait;

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

constexpr int64_t kElements = 16 << 20;  // 64 MiB of float32: above every mmap threshold glibc sets itself
constexpr long kPages = (kElements * 4) / 4096;

// Page faults while a freshly allocated 64 MiB tensor is filled, with `other` (another
// 64 MiB, so the step's peak is twice the block) freed just before.
long faults_filling_after_freeing(at::Tensor other) {
  other.fill_(1.0F);
  other = at::Tensor();
  const long before = minor_faults();
  at::Tensor again = at::empty({kElements});
  again.fill_(2.0F);
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("a freed block of 1 MiB or more is kept for the next allocation of its size, within half the step's peak, "
          "and the books count only what is in use",
          "[memory][freed_blocks]") {
  install_tracking_allocator();
  at::set_num_threads(1);  // the fills run on this thread: their faults are the ones counted
  at::Tensor held = at::empty({kElements + (1 << 10)});  // the step's other tensors: with the two blocks, over twice one
  reset_cpu_memory_peak();
  const MemoryStats before = cpu_memory_stats();

  cache_freed_blocks(false);
  const long handed_back = faults_filling_after_freeing(at::empty({kElements}));
  cache_freed_blocks(true);
  const long kept = faults_filling_after_freeing(at::empty({kElements}));
  cache_freed_blocks(false);
  INFO("faults handed back " << handed_back << ", kept " << kept << ", of " << kPages << " pages");
  if (!freed_blocks_can_be_kept()) {
    CHECK(kept > kPages / 2);  // a sanitizer's allocator must see every free: nothing is kept
  } else {
    CHECK(handed_back > kPages / 2);
    CHECK(kept < kPages / 100);
  }
  // What the cache keeps is not in use: the books are back where they were.
  CHECK(cpu_memory_stats().current_bytes == before.current_bytes);

  // Alone, a block is more than half the peak it makes: handed back.
  held = at::Tensor();
  reset_cpu_memory_peak();
  cache_freed_blocks(true);
  at::empty({kElements}).fill_(1.0F);
  const long start = minor_faults();
  at::empty({kElements}).fill_(2.0F);
  const long over_cap = minor_faults() - start;
  cache_freed_blocks(false);
  INFO("faults past the cap " << over_cap);
  CHECK(over_cap > kPages / 2);
}
