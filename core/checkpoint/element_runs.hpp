#pragma once
// A part of a tensor, or a region a rank asks for, as the runs of consecutive row-major
// elements it covers: a flat range is one run, a rectangular slice one per row of its
// last dimension (rows that follow each other in both orders merge). Two such lists
// meet in a merge of sorted runs, which gives the pieces to copy from a part into a
// region without an index per element (a 7B model's tensors have tens of millions).
#include <cstdint>
#include <vector>

namespace plait::checkpoint {

struct ElementRun {
  int64_t global = 0;  // the first element's row-major index in the whole tensor
  int64_t local = 0;   // its position in the part's (or region's) own element order
  int64_t length = 0;
};

std::vector<ElementRun> runs_of_range(int64_t start, int64_t length);
std::vector<ElementRun> runs_of_slice(const std::vector<int64_t>& shape, const std::vector<int64_t>& offsets,
                                      const std::vector<int64_t>& lengths);

// A piece both lists cover: `length` elements at `from` in the first's order and at
// `to` in the second's. Pieces adjacent in both orders are merged.
struct Overlap {
  int64_t from = 0, to = 0, length = 0;
};
std::vector<Overlap> overlaps(const std::vector<ElementRun>& from, const std::vector<ElementRun>& to);

}  // namespace plait::checkpoint
