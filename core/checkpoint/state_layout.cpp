#include "checkpoint/state_layout.hpp"

#include "plait/sdk/error.hpp"

namespace plait::checkpoint {
namespace {

// A run of a tensor's row-major elements as boxes, each contiguous in that order: a
// fixed index on the leading dimensions, a range on one, whole trailing ones.
struct Box {
  std::vector<int64_t> offsets, lengths;
  int64_t first = 0;  // flat index of its first element
};

void boxes_of(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, std::vector<int64_t>& prefix,
              int64_t lo, int64_t hi, int64_t base, std::vector<Box>& out) {
  const std::size_t d = prefix.size();
  if (lo >= hi) return;
  auto emit = [&](int64_t i0, int64_t i1) {
    Box b{prefix, std::vector<int64_t>(prefix.size(), 1), base + i0 * strides[d]};
    b.offsets.push_back(i0);
    b.lengths.push_back(i1 - i0);
    for (std::size_t t = d + 1; t < shape.size(); ++t) {
      b.offsets.push_back(0);
      b.lengths.push_back(shape[t]);
    }
    out.push_back(std::move(b));
  };
  const int64_t s = strides[d];
  int64_t i0 = lo / s;
  const int64_t i1 = hi / s, r0 = lo % s, r1 = hi % s;
  auto inner = [&](int64_t i, int64_t a, int64_t b) {
    prefix.push_back(i);
    boxes_of(shape, strides, prefix, a, b, base + i * s, out);
    prefix.pop_back();
  };
  if (i0 == i1) return inner(i0, r0, r1);
  if (r0 != 0) inner(i0++, r0, s);
  if (i0 < i1) emit(i0, i1);
  if (r1 != 0) inner(i1, 0, r1);
}

// A slice that is one contiguous run of the tensor becomes a flat range.
Region normalised(const std::vector<int64_t>& shape, std::vector<int64_t> offsets, std::vector<int64_t> lengths) {
  std::size_t lead = 0;
  while (lead < shape.size() && lengths[lead] == 1) ++lead;
  bool contiguous = true;
  for (std::size_t t = lead + 1; t < shape.size(); ++t) contiguous = contiguous && offsets[t] == 0 && lengths[t] == shape[t];
  if (!contiguous) return Region::slice(std::move(offsets), std::move(lengths));
  const auto strides = row_major_strides(shape);
  int64_t start = 0, numel = 1;
  for (std::size_t t = 0; t < shape.size(); ++t) {
    start += offsets[t] * strides[t];
    numel *= lengths[t];
  }
  return Region::range(start, numel);
}

}  // namespace

std::vector<int64_t> LocalLayout::global_shape() const {
  std::vector<int64_t> g = local_shape;
  if (!whole()) g[static_cast<std::size_t>(split.dim)] *= tp;
  return g;
}

int64_t Piece::numel() const {
  if (box.empty()) return global.length;
  int64_t n = 1;
  for (std::size_t d = 0; d < box.size(); ++d) n *= static_cast<int64_t>(d) == dim ? length : box[d];
  return n;
}

at::Tensor Piece::of(const at::Tensor& run) const {
  if (box.empty()) return run.narrow(0, offset, global.length);
  int64_t n = 1;
  for (int64_t l : box) n *= l;
  at::Tensor b = run.narrow(0, offset, n).view(box);
  return dim >= 0 ? b.narrow(dim, from, length) : b;
}

std::vector<Piece> pieces_of(const LocalLayout& layout, int64_t start, int64_t length) {
  int64_t local_numel = 1;
  for (int64_t l : layout.local_shape) local_numel *= l;
  PLAIT_CHECK(start >= 0 && length >= 0 && start + length <= local_numel,
              concat("checkpoint: elements [", start, ", ", start + length, ") are outside a tensor of ", local_numel),
              "a data plugin's state parts must lie within their parameter");
  if (length == 0) return {};
  if (layout.whole()) return {Piece{Region::range(start, length), 0, {}, -1, 0, 0}};
  const auto sd = static_cast<std::size_t>(layout.split.dim);
  const std::vector<int64_t> global = layout.global_shape();
  if (sd == 0 && layout.split.parts == 1) {
    return {Piece{Region::range(layout.tp_rank * local_numel + start, length), 0, {}, -1, 0, 0}};
  }
  std::vector<Box> boxes;
  std::vector<int64_t> prefix;
  boxes_of(layout.local_shape, row_major_strides(layout.local_shape), prefix, start, start + length, 0, boxes);
  // Along the split dimension, local index i is in stacked part i / block; each part's
  // slice of this rank starts at tp_rank * block within the part's global block * tp.
  const int64_t block = layout.local_shape[sd] / layout.split.parts;
  std::vector<Piece> out;
  for (const Box& b : boxes) {
    const int64_t lo = b.offsets[sd], hi = lo + b.lengths[sd];
    for (int64_t a = lo; a < hi;) {
      const int64_t part = a / block, end = std::min(hi, (part + 1) * block);
      std::vector<int64_t> offsets = b.offsets, lengths = b.lengths;
      offsets[sd] = part * block * layout.tp + layout.tp_rank * block + (a - part * block);
      lengths[sd] = end - a;
      const bool narrowed = a != lo || end != hi;
      out.push_back(Piece{normalised(global, std::move(offsets), std::move(lengths)), b.first - start, b.lengths,
                          narrowed ? layout.split.dim : -1, a - lo, end - a});
      a = end;
    }
  }
  return out;
}

}  // namespace plait::checkpoint
