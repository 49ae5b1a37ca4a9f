#include "dist/tensor_gather.hpp"

#include <ATen/ATen.h>

namespace plait {

NamedTensors gather_tensor_parallel(const NamedTensors& local, const std::map<std::string, TensorSplit>& splits,
                                         Communicator* tp) {
  if (tp == nullptr) return local;
  const int64_t ways = tp->size();
  NamedTensors out;
  for (const auto& [name, slice] : local) {
    auto it = splits.find(name);
    if (it == splits.end() || it->second.dim < 0) {
      out.emplace_back(name, slice);
      continue;
    }
    const TensorSplit split = it->second;
    at::Tensor mine = slice.contiguous().reshape({-1});  // gloo gathers flat tensors
    at::Tensor all = at::empty({ways * mine.numel()}, mine.options());
    CommOptions o;
    o.tag = {"core", "tp-gather", name, -1};
    tp->all_gather(all, mine, o)->wait();
    std::vector<int64_t> shape = {ways};
    for (int64_t d : slice.sizes()) shape.push_back(d);
    at::Tensor by_rank = all.view(shape);
    // Rank r holds part p's r-th slice at [p*n, (p+1)*n) along dim: reassemble part by part.
    std::vector<at::Tensor> parts;
    for (int64_t p = 0; p < split.parts; ++p) {
      std::vector<at::Tensor> slices;
      for (int64_t r = 0; r < ways; ++r) {
        at::Tensor rank_slice = by_rank[r];
        const int64_t n = rank_slice.size(split.dim) / split.parts;
        slices.push_back(rank_slice.narrow(split.dim, p * n, n));
      }
      parts.push_back(at::cat(slices, split.dim));
    }
    out.emplace_back(name, at::cat(parts, split.dim));
  }
  return out;
}

}  // namespace plait
