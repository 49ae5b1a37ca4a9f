// [train] cache_freed_blocks: a rank keeps the memory it frees in the C library's heap,
// so a buffer a step allocates again (a gathered group, a gradient, an activation) finds
// its pages mapped instead of faulting each 4 KiB in anew, whatever its size.
#include <sys/resource.h>

#include <vector>

#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "memory/freed_memory.hpp"
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

// A step's large buffers, allocated, filled and freed: a whole one, three quarters of
// one (a size that changes), a whole one again while the first two are alive. The page
// faults of the third such step, when the first two have set the heap's high-water mark.
long faults_in_third_step() {
  long faults = 0;
  for (int step = 0; step < 3; ++step) {
    const long before = minor_faults();
    std::vector<at::Tensor> buffers;
    for (const int64_t elements : {kElements, kElements * 3 / 4, kElements}) {
      buffers.push_back(at::empty({elements}));
      buffers.back().fill_(1.0F);
    }
    faults = minor_faults() - before;
  }
  return faults;
}

}  // namespace

TEST_CASE("a rank keeps freed memory for its next allocations of any size that fits, and the books count only what "
          "is in use",
          "[memory][freed_blocks]") {
  install_tracking_allocator();
  at::set_num_threads(1);  // the fills run on this thread: their faults are the ones counted
  const MemoryStats before = cpu_memory_stats();

  keep_freed_memory(false);
  const long handed_back = faults_in_third_step();
  keep_freed_memory(true);
  const long kept = faults_in_third_step();
  keep_freed_memory(false);
  const long handed_back_again = faults_in_third_step();
  INFO("faults in a step of " << 11 * kPages / 4 << " pages: handed back " << handed_back << ", kept " << kept
                              << ", handed back again " << handed_back_again);
  CHECK(handed_back > kPages);
  CHECK(handed_back_again > kPages);  // off again: the heap gave back what it kept
  if (!freed_memory_can_be_kept()) {
    CHECK(kept > kPages);  // a sanitizer's allocator replaces the C library's: nothing is kept
  } else {
    CHECK(kept < kPages / 100);
  }
  // What the heap keeps is not in use: the books are back where they were.
  CHECK(cpu_memory_stats().current_bytes == before.current_bytes);
}
