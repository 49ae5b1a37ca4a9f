#include "data/token_scan.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace plait {
namespace {

template <class T>
int64_t max_of(const T* p, int64_t n) {
  T m = 0;
  for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;  // branch-free: vectorised
  return static_cast<int64_t>(m);
}

template <class T>
int64_t parallel_max(const T* p, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 24;  // tokens per thread at least
  const int64_t threads = std::clamp<int64_t>(n / kChunk, 1, std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  if (threads == 1) return max_of(p, n);
  std::vector<int64_t> results(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> pool;
  const int64_t per = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    pool.emplace_back([&results, p, t, begin, end] { results[static_cast<std::size_t>(t)] = max_of(p + begin, end - begin); });
  }
  for (auto& th : pool) th.join();
  return *std::max_element(results.begin(), results.end());
}

template <class T>
int64_t first_at_least(const T* p, int64_t n, int64_t bound) {
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(p[i]) >= bound) return i;
  }
  return -1;
}

}  // namespace

int64_t max_token(const void* data, int width, int64_t count) {
  switch (width) {
    case 1: return parallel_max(static_cast<const uint8_t*>(data), count);
    case 2: return parallel_max(static_cast<const uint16_t*>(data), count);
    default: return parallel_max(static_cast<const uint32_t*>(data), count);
  }
}

int64_t first_token_at_least(const void* data, int width, int64_t count, int64_t bound) {
  switch (width) {
    case 1: return first_at_least(static_cast<const uint8_t*>(data), count, bound);
    case 2: return first_at_least(static_cast<const uint16_t*>(data), count, bound);
    default: return first_at_least(static_cast<const uint32_t*>(data), count, bound);
  }
}

}  // namespace plait
