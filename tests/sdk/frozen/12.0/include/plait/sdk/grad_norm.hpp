#pragma once
// The global gradient norm when gradients are spread over ranks: a data-parallel shard
// group holds one slice of every gradient each; the tensor-parallel group holds slices
// of the split parameters and whole copies of the others. Each rank sums its squares
// by kind, and the sums are reduced where they are spread, so every rank gets the norm
// the single process computes.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/model.hpp"
#include "plait/sdk/optim.hpp"

namespace plait {

// The step's squared gradient norm on the device (float64 scalars), so that computing
// it reads nothing back to the host: the global one, the same on every rank, and this
// rank's own part (so that a non-finite norm can be traced to the ranks whose gradients
// made it). The core's step reads both with the loss, in one copy (data_parallel.hpp).
struct GradNorm {
  at::Tensor squared;       // global
  at::Tensor squared_here;  // this rank's own squares, before any reduction
};

// Each gradient's norm, kept on its device until the sums are taken.
struct SquaredNorms {
  std::vector<at::Tensor> whole;  // parameters every tp rank holds whole
  std::vector<at::Tensor> split;  // tp-split parameters: this rank's slices

  void add(const TensorSplit& split_of, const at::Tensor& grad) {
    (split_of.dim >= 0 ? split : whole).push_back(at::linalg_vector_norm(grad, 2).reshape({1}));
  }
  // [sum of whole squares, sum of split squares], float64 on `options`' device; each
  // norm is squared in float64, as squared_norm() does.
  at::Tensor sums(const at::TensorOptions& options) const {
    const auto f64 = options.dtype(at::kDouble);
    auto total = [&](const std::vector<at::Tensor>& norms) {
      return norms.empty() ? at::zeros({1}, f64) : at::cat(norms).to(f64).square().sum().reshape({1});
    };
    return at::cat({total(whole), total(split)});
  }
};

// `shards`: the group whose ranks hold disjoint pieces of every gradient (null when each
// holds whole gradients); `tp`: the tensor-parallel group (null without one); `pp`: the
// pipeline group, whose stages hold disjoint parameters (null without one). `options`:
// where the reduction runs (the compute device: NCCL takes no host tensors).
inline GradNorm global_grad_norm(const SquaredNorms& local, Communicator* shards, Communicator* tp, Communicator* pp,
                                 const at::TensorOptions& options, const std::string& plugin) {
  at::Tensor sums = local.sums(options);
  const at::Tensor here = sums.sum();
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
  return {sums.sum(), here};
}

}  // namespace plait
