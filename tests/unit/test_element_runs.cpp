// Element runs: the pieces copied from a checkpoint's part into a region must be exactly
// the elements both cover, at their places in each, whatever the shapes (checked against
// a walk over every element), and a slice that spans whole rows is one run.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "checkpoint/checkpoint_index.hpp"
#include "checkpoint/element_runs.hpp"

using namespace plait::checkpoint;

namespace {

struct Box {
  bool flat;
  int64_t start, length;
  std::vector<int64_t> offsets, lengths;
};

std::vector<ElementRun> runs(const std::vector<int64_t>& shape, const Box& b) {
  return b.flat ? runs_of_range(b.start, b.length) : runs_of_slice(shape, b.offsets, b.lengths);
}

// global element -> its place in the box's own order, by visiting every element.
std::map<int64_t, int64_t> places(const std::vector<int64_t>& shape, const Box& b) {
  std::map<int64_t, int64_t> out;
  if (b.flat) {
    for (int64_t k = 0; k < b.length; ++k) out[b.start + k] = k;
    return out;
  }
  const auto strides = row_major_strides(shape);
  int64_t numel = 1;
  for (int64_t l : b.lengths) numel *= l;
  for (int64_t local = 0; local < numel; ++local) {
    int64_t rest = local, global = 0;
    for (std::size_t d = shape.size(); d-- > 0;) {
      global += (b.offsets[d] + rest % b.lengths[d]) * strides[d];
      rest /= b.lengths[d];
    }
    out[global] = local;
  }
  return out;
}

Box random_box(const std::vector<int64_t>& shape, std::mt19937& gen) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (gen() % 2 == 0) {
    const int64_t start = static_cast<int64_t>(gen() % numel);
    return {true, start, 1 + static_cast<int64_t>(gen() % (numel - start)), {}, {}};
  }
  Box b{false, 0, 0, {}, {}};
  for (int64_t s : shape) {
    const int64_t o = static_cast<int64_t>(gen() % s);
    b.offsets.push_back(o);
    b.lengths.push_back(1 + static_cast<int64_t>(gen() % (s - o)));
  }
  return b;
}

}  // namespace

TEST_CASE("the pieces of a part that a region needs are the elements both cover, at their places",
          "[checkpoint][element_runs]") {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int64_t> shape;
    for (std::size_t d = 0, rank = 1 + gen() % 3; d < rank; ++d) shape.push_back(1 + static_cast<int64_t>(gen() % 6));
    const Box part = random_box(shape, gen), region = random_box(shape, gen);
    const auto in_part = places(shape, part), in_region = places(shape, region);
    std::map<int64_t, int64_t> expected;  // place in the part -> place in the region
    for (const auto& [global, at] : in_part) {
      if (in_region.count(global)) expected[at] = in_region.at(global);
    }
    std::map<int64_t, int64_t> got;
    for (const Overlap& o : overlaps(runs(shape, part), runs(shape, region))) {
      REQUIRE(o.length > 0);
      for (int64_t k = 0; k < o.length; ++k) REQUIRE(got.emplace(o.from + k, o.to + k).second);
    }
    INFO("trial " << trial);
    REQUIRE(got == expected);
  }
}

TEST_CASE("runs merge where rows follow each other: a slice of whole rows is one run", "[checkpoint][element_runs]") {
  const std::vector<int64_t> shape = {8, 6, 4};
  // Rows 2..5 of the first dimension, whole in the others: contiguous.
  const auto rows = runs_of_slice(shape, {2, 0, 0}, {4, 6, 4});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].global == 48);
  CHECK(rows[0].length == 96);
  // Half the last dimension: one run per row of it (8 * 6 of them).
  const auto columns = runs_of_slice(shape, {0, 0, 2}, {8, 6, 2});
  CHECK(columns.size() == 48);
  CHECK(columns[1].global == 6);
  CHECK(columns[1].local == 2);
  // A flat part and a column slice meet in one piece per row of the slice it covers.
  const auto pieces = overlaps(runs_of_range(0, 12), columns);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].from == 10);
  CHECK(pieces[2].to == 4);
  CHECK(pieces[2].length == 2);
  CHECK(runs_of_slice({}, {}, {}).size() == 1);  // a scalar
  CHECK(runs_of_slice(shape, {0, 0, 0}, {8, 0, 4}).empty());
}
