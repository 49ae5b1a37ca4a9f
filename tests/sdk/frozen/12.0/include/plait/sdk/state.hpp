#pragma once
// A data plugin's state in checkpoints. A plugin describes what it keeps as parts of
// named tensors: for a parameter (by its reference name) and a kind of state (the master
// value, AdamW's moments, or a kind of its own), a run of elements of the parameter's
// local tensor, the tensor its ParamRef holds (a tensor-parallel slice, or whole). The
// core maps local tensors to the reference model's global ones (it knows the splits and
// the stages), so a plugin never gathers anything to save; it writes each element once,
// and on resume hands the plugin exactly its parts back, whatever mesh and strategy
// wrote the checkpoint. A plugin that implements these lists `checkpoint` in its
// capabilities (capabilities.hpp); one that does not is refused when checkpoints are on.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plait/sdk/version.hpp"

namespace plait {

// The kinds of state every AdamW plugin keeps; a plugin may add its own ("ema", ...).
namespace state_kind {
inline constexpr const char* param = "param";            // the master value (fp32 under bf16)
inline constexpr const char* exp_avg = "exp_avg";        // AdamW's first moment
inline constexpr const char* exp_avg_sq = "exp_avg_sq";  // AdamW's second moment
}  // namespace state_kind

struct StatePart {
  std::string param;  // the parameter's reference name (ParamRef::name)
  std::string kind;   // a state_kind, or the plugin's own
  int64_t start = 0;  // first element, in the row-major order of the local tensor
  at::Tensor values;  // elements [start, start + numel) of it: any shape, device and dtype
  // Ranks of the data-parallel group that hold these same values (replicated state):
  // the core has each write 1/replicas of them. `replica`: this rank's index among them.
  int replicas = 1, replica = 0;
};

// What a plugin loads its state from (the core's, on resume).
class PLAIT_SDK_VISIBLE StateSource {
 public:
  virtual ~StateSource() = default;
  // Fills `into` (any device and dtype, contiguous) with elements [start, start +
  // into.numel()) of `param`'s local tensor of `kind`. Throws plait::Error, naming the
  // parameter, when the checkpoint does not hold them.
  virtual void read_into(const at::Tensor& into, const std::string& param, const std::string& kind, int64_t start) = 0;
  // Whether the checkpoint holds this kind of state for `param` (a plugin's own kinds are
  // absent from a checkpoint another plugin saved).
  virtual bool has(const std::string& param, const std::string& kind) const = 0;
};

}  // namespace plait
