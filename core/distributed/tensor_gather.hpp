#pragma once
// Whole parameters (or gradients) from this rank's tensor-parallel slices, so that
// checkpoints and the equivalence harness see the reference model's tensors whatever
// the tp degree.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/model.hpp"

namespace plait {

// `splits`: how each name is split (names not in it, or with dim -1, are whole). Every
// tp rank calls it (all-gathers over `tp`, on `device`: the rank's); without a tp group
// it returns `local`.
NamedTensors gather_tensor_parallel(const NamedTensors& local, const std::map<std::string, TensorSplit>& splits,
                                    Communicator* tp, const at::Device& device);

// Every pipeline rank's tensors on pipeline rank 0 (its own first, then rank 1's, ...);
// other ranks get theirs back. Names, shapes and dtypes travel with the data, since a
// stage does not know another's. What travels is on `device` (the rank's), received
// tensors stay there. Without a pp group it returns `local`.
NamedTensors gather_pipeline_stages(NamedTensors local, Communicator* pp, const at::Device& device);

}  // namespace plait
