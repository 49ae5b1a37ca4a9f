#pragma once
// Which layers split across the tensor-parallel axis, and how: a tensor plugin gives
// the model zoo a layer factory that builds sharded layers.
#include <memory>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/layers.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

struct PLAIT_ABI_GROWS TensorParallelSetup {
  Communicator* tp_group = nullptr;  // the tensor-parallel axis's group
};

class PLAIT_SDK_VISIBLE TensorParallel : public Plugin {
 public:
  using Interface = TensorParallel;
  static constexpr const char* kKind = "tensor";
  // Once per rank, after configure(): the factory the model zoo builds this rank's layers with.
  virtual std::shared_ptr<LayerFactory> layer_factory(const TensorParallelSetup& setup) = 0;
};

}  // namespace plait
