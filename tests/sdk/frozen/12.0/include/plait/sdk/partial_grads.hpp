#pragma once
// Gradients that are partial sums over the tensor-parallel ranks (TensorSplit::
// partial_grad): under sequence parallel a norm or a row bias sees only this rank's
// positions. Megatron-LM sums them over tp once per step, after backward, as one
// coalesced all-reduce; a data plugin does the same with sum_over_tp on whatever it
// holds of them (whole gradients, or its shards of them: the sum is linear, so it
// commutes with the data-parallel reduction, and every tp rank shards alike).
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/error.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// Sums `grads` over `tp` in place, as one flat all-reduce staged on `device` (NCCL takes
// no host tensors). Every tp rank passes the same shapes in the same order.
inline void sum_over_tp(const std::vector<at::Tensor>& grads, Communicator* tp, const at::Device& device,
                        const std::string& plugin) {
  if (tp == nullptr || tp->size() == 1 || grads.empty()) return;
  std::vector<at::Tensor> flat;
  for (const auto& g : grads) flat.push_back(g.reshape({-1}).to(device, grads.front().scalar_type()));
  at::Tensor bucket = at::cat(flat);
  AllReduceOptions o;
  o.tag = {plugin, "partial-grads-tp", "", -1};
  tp->all_reduce(bucket, o)->wait();
  int64_t offset = 0;
  at::NoGradGuard no_grad;
  for (const auto& g : grads) {
    g.copy_(bucket.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

// The gradients of `params` that are partial over tp. Every one must exist: a layer that
// marks a parameter partial uses it on every rank's positions, and a gradient made up
// here would not be the data plugin's storage (a ddp bucket view).
inline std::vector<at::Tensor> partial_grads(const std::vector<ParamRef>& params, const std::string& plugin) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) {
    if (!p.split.partial_grad) continue;
    PLAIT_CHECK(p.tensor.grad().defined(),
                concat(plugin, ": '", p.name, "' is marked partial over tensor parallel but has no gradient after the "
                       "step's backward"),
                "a layer that marks a parameter partial_grad must use it in every forward");
    out.push_back(p.tensor.grad());
  }
  return out;
}

}  // namespace plait
