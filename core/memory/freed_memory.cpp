#include "memory/freed_memory.hpp"

#include <malloc.h>

namespace plait {
namespace {

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

// glibc's defaults (mallopt(3)). Its own dynamic mmap threshold, which rises to the size
// of a block it unmapped, is not restored once plait has set these.
constexpr int kDefaultMmapMax = 65536;
constexpr int kDefaultTrimThreshold = 128 * 1024;
bool g_kept = false;

}  // namespace

// glibc maps a block above its mmap threshold (at most 32 MiB) on its own and unmaps it
// when freed, and trims the heap's free top: the next allocation is zeroed and faulted in
// again, a page every 4 KiB (a 124M ZeRO-3 rank's gathered groups, its gradients and
// activations, and gloo's own buffers, each step). With no block mapped on its own and
// no trimming, a freed block stays in the heap, where glibc's best fit serves the next
// allocation of any size that fits. An exact-size cache of plait's tensors alone (the
// earlier way) missed gloo's buffers and sizes that change, and was capped.
void keep_freed_memory(bool on) {
  if (kSanitized || on == g_kept) return;  // off before on: the C library as it came
  g_kept = on;
  mallopt(M_MMAP_MAX, on ? 0 : kDefaultMmapMax);
  mallopt(M_TRIM_THRESHOLD, on ? -1 : kDefaultTrimThreshold);  // -1: never trim
  if (!on) malloc_trim(0);
}

bool freed_memory_can_be_kept() { return !kSanitized; }

}  // namespace plait
