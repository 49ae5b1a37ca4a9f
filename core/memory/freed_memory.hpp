#pragma once
// Whether a rank keeps the host memory it frees for its next allocations ([train]
// cache_freed_blocks), as an accelerator's caching allocator keeps device memory.

namespace plait {

// On: the C library serves every allocation from its heap and never hands freed memory
// back to the kernel, so a buffer a step allocates again finds its pages mapped. Off (the
// C library's own behaviour until asked): large blocks are mapped and unmapped one by one,
// and turning it off hands back what the heap kept.
void keep_freed_memory(bool on);
// False in a sanitizer's build, whose allocator replaces the C library's: nothing is
// kept there.
bool freed_memory_can_be_kept();

}  // namespace plait
