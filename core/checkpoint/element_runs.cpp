#include "checkpoint/element_runs.hpp"

#include <algorithm>

#include "checkpoint/checkpoint_index.hpp"

namespace plait::checkpoint {
namespace {

void append(std::vector<ElementRun>& runs, ElementRun r) {
  if (r.length == 0) return;
  if (!runs.empty()) {
    ElementRun& last = runs.back();
    if (last.global + last.length == r.global && last.local + last.length == r.local) {
      last.length += r.length;
      return;
    }
  }
  runs.push_back(r);
}

}  // namespace

std::vector<ElementRun> runs_of_range(int64_t start, int64_t length) {
  std::vector<ElementRun> runs;
  append(runs, {start, 0, length});
  return runs;
}

std::vector<ElementRun> runs_of_slice(const std::vector<int64_t>& shape, const std::vector<int64_t>& offsets,
                                      const std::vector<int64_t>& lengths) {
  std::vector<ElementRun> runs;
  if (shape.empty()) return runs_of_range(0, 1);
  const std::size_t rank = shape.size();
  if (std::any_of(lengths.begin(), lengths.end(), [](int64_t l) { return l == 0; })) return runs;
  const auto strides = row_major_strides(shape);
  std::vector<int64_t> at(rank - 1, 0);  // the row's index in the slice, over every dimension but the last
  const int64_t row = lengths[rank - 1];
  for (int64_t local = 0;; local += row) {
    int64_t global = offsets[rank - 1];
    for (std::size_t d = 0; d + 1 < rank; ++d) global += (offsets[d] + at[d]) * strides[d];
    append(runs, {global, local, row});
    std::size_t d = rank - 1;
    while (d > 0 && ++at[d - 1] == lengths[d - 1]) at[--d] = 0;
    if (d == 0) break;
  }
  return runs;
}

std::vector<Overlap> overlaps(const std::vector<ElementRun>& from, const std::vector<ElementRun>& to) {
  std::vector<Overlap> out;
  std::size_t i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    const ElementRun& a = from[i];
    const ElementRun& b = to[j];
    const int64_t lo = std::max(a.global, b.global);
    const int64_t hi = std::min(a.global + a.length, b.global + b.length);
    if (lo < hi) {
      const Overlap o{a.local + (lo - a.global), b.local + (lo - b.global), hi - lo};
      if (!out.empty() && out.back().from + out.back().length == o.from && out.back().to + out.back().length == o.to) {
        out.back().length += o.length;
      } else {
        out.push_back(o);
      }
    }
    if (a.global + a.length <= b.global + b.length) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

}  // namespace plait::checkpoint
