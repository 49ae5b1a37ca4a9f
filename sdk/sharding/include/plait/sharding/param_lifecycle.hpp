#pragma once
// Stage 3's parameter lifecycle: a group's parameters are all-gathered just before its
// first unit runs forward (the next groups' gathers prefetched), freed after its last
// unit's forward, gathered again when backward reaches it (the group backward needs
// next prefetched), and freed once its gradient is reduced.
#include <cstddef>

#include "plait/sdk/model.hpp"
#include "plait/sharding/context.hpp"

namespace plait::sharding {

class ParamLifecycle {
 public:
  explicit ParamLifecycle(ShardingContext& ctx) : ctx_(ctx) {}

  // Wraps every unit so that its forward calls before_forward/after_forward.
  void wrap_units(StageModel& model);

  void before_forward(int unit);
  void after_forward(int unit, at::Tensor& output);
  void before_backward(int unit);

  // Starts the all-gather of a sharded group (no wait); a no-op when gathered or gathering.
  void gather(std::size_t group);
  void ensure_gathered(std::size_t group);

 private:
  // An offloaded group's shard copied to the device (its gather's input); the stream
  // current at the call waits for the copy.
  void upload_shard(std::size_t group);

  ShardingContext& ctx_;
};

}  // namespace plait::sharding
