#pragma once
// The largest token id of a token file, found before any rank starts, so that a token
// the model's vocabulary cannot embed is refused with its position instead of failing
// steps into the run. The scan reads the memory-mapped file once, in parallel chunks,
// with a loop the compiler vectorises: a multi-GB file takes about a second when it is
// in the page cache (`tools/bench/token_scan.py` measures it).
#include <cstdint>

namespace plait {

// The largest of `count` unsigned integers of `width` bytes (1, 2 or 4) at `data`.
int64_t max_token(const void* data, int width, int64_t count);

// The position of the first token >= `bound`, or -1.
int64_t first_token_at_least(const void* data, int width, int64_t count, int64_t bound);

}  // namespace plait
