#pragma once
// Each unit's backward on the trace of a traced step. Autograd runs a stage's backward as
// one call, so a hook on each unit's output notes when the gradient reaching it is ready,
// which is when that unit's backward begins; a unit's backward ends where the one before
// it begins, and the stage's first unit's where the call returns.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace plait {

class UnitBackwardTrace {
 public:
  using Clock = std::chrono::steady_clock;
  using Key = std::pair<int64_t, int64_t>;  // (stage, microbatch)

  // A unit's output in a traced forward of `key`, in the order of the forward; `label`
  // names the unit's backward on the trace.
  void watch(const Key& key, std::string label, const at::Tensor& output);
  // Puts key's units' backwards on the trace, the backward call having returned at `ended`.
  void emit(const Key& key, Clock::time_point ended);

 private:
  struct Mark {
    std::string label;
    std::shared_ptr<std::optional<Clock::time_point>> ready;  // set by the hook, on autograd's thread
  };
  std::map<Key, std::vector<Mark>> marks_;
};

}  // namespace plait
