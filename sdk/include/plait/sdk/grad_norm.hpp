#pragma once
// The global gradient norm when gradients are spread over ranks: a data-parallel shard
// group holds one slice of every gradient each; the tensor-parallel group holds slices
// of the split parameters and whole copies of the others. Each rank sums its squares
// by kind, and the sums are reduced where they are spread, so every rank gets the norm
// the single process computes.
#include <cmath>
#include <string>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/model.hpp"
#include "plait/sdk/optim.hpp"

namespace plait {

// The step's global gradient norm, the same on every rank, and whether this rank's own
// part of it was finite (so that a non-finite norm can be traced to the ranks whose
// gradients made it).
struct GradNorm {
  double norm = 0.0;
  bool finite_here = true;
};

struct SquaredNorms {
  double whole = 0.0;  // parameters every tp rank holds whole
  double split = 0.0;  // tp-split parameters: this rank's slices

  void add(const TensorSplit& split_of, const at::Tensor& grad) {
    (split_of.dim >= 0 ? split : whole) += squared_norm(grad);
  }
};

// `shards`: the group whose ranks hold disjoint pieces of every gradient (null when each
// holds whole gradients); `tp`: the tensor-parallel group (null without one); `pp`: the
// pipeline group, whose stages hold disjoint parameters (null without one). `options`:
// where the reduction runs (the compute device: NCCL takes no host tensors).
inline GradNorm global_grad_norm(const SquaredNorms& local, Communicator* shards, Communicator* tp, Communicator* pp,
                                 const at::TensorOptions& options, const std::string& plugin) {
  const bool finite_here = std::isfinite(local.whole + local.split);
  if (shards == nullptr && tp == nullptr && pp == nullptr) return {std::sqrt(local.whole + local.split), finite_here};
  at::Tensor sums = at::tensor({local.whole, local.split}, at::TensorOptions().dtype(at::kDouble)).to(options.device());
  if (shards != nullptr) {
    AllReduceOptions o;
    o.tag = {plugin, "grad-norm", "", -1};
    shards->all_reduce(sums, o)->wait();
  }
  if (tp != nullptr) {
    at::Tensor split = sums.narrow(0, 1, 1).clone();
    AllReduceOptions o;
    o.tag = {plugin, "grad-norm-tp", "", -1};
    tp->all_reduce(split, o)->wait();
    sums.narrow(0, 1, 1).copy_(split);
  }
  if (pp != nullptr) {
    AllReduceOptions o;
    o.tag = {plugin, "grad-norm-pp", "", -1};
    pp->all_reduce(sums, o)->wait();
  }
  sums = sums.cpu();
  return {std::sqrt(sums[0].item<double>() + sums[1].item<double>()), finite_here};
}

}  // namespace plait
