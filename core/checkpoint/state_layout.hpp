#pragma once
// Where a run of a local tensor's elements lies in the global tensor. A rank holds each
// parameter as its local tensor: whole, or its tensor-parallel slice (TensorSplit: along
// `dim`, `parts` stacked tensors each cut into tp slices). A data plugin's state is runs
// of local elements (a ZeRO shard is a flat run of a padded buffer, clipped to each
// parameter); in the global tensor such a run is one flat range when the slice is
// contiguous there, and otherwise a few rectangles. Saving writes each piece as a part of
// the global tensor; loading reads each piece's region and puts it back, so any mesh
// and strategy read what any other wrote.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "checkpoint/checkpoint_reader.hpp"
#include "plait/sdk/model.hpp"

namespace plait::checkpoint {

struct LocalLayout {
  std::vector<int64_t> local_shape;
  TensorSplit split;
  int64_t tp = 1, tp_rank = 0;
  std::vector<int64_t> global_shape() const;
  bool whole() const { return tp == 1 || split.dim < 0; }
};

// One piece of a run: its region of the global tensor, and which of the run's elements
// are its, in the region's row-major order.
struct Piece {
  Region global;
  int64_t offset = 0;          // the run's first element the piece takes
  std::vector<int64_t> box;    // those elements as a box of this shape (empty: flat, of the region's length)
  int64_t dim = -1, from = 0, length = 0;  // and of the box, only [from, from + length) along dim
  int64_t numel() const;
  // The piece's elements within `run` (the run, flat): a view, strided where the box is narrowed.
  at::Tensor of(const at::Tensor& run) const;
};

// Elements [start, start + length) of the local tensor, as pieces of the global one.
std::vector<Piece> pieces_of(const LocalLayout& layout, int64_t start, int64_t length);

}  // namespace plait::checkpoint
