#pragma once
// A data plugin's state parts (state.hpp) as parts of the checkpoint's global tensors,
// and back. The checkpoint names a kind of state of a parameter "<kind>/<parameter>"
// ("param/transformer.wte.weight", "exp_avg/..."). Replicated state is written once:
// the plugin's replicas (data parallel) and, for a parameter every tp rank holds whole,
// the tp ranks each write their share of it.
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/shard_writer.hpp"
#include "checkpoint/state_layout.hpp"
#include "plait/sdk/state.hpp"

namespace plait::checkpoint {

std::string state_tensor_name(const std::string& kind, const std::string& param);

using Layouts = std::map<std::string, LocalLayout>;  // by parameter name: what this rank holds

// The layouts of a model's parameters that hold memory (not on the meta device), as tp
// rank `tp_rank` of `tp` holds them.
Layouts layouts_of(const StageModel& model, int64_t tp, int64_t tp_rank);

// This rank's share of the parts, in host memory: a device tensor's copied (into pinned
// memory, which the device copies at full speed), a host tensor's borrowed (a view).
std::vector<OwnedPart> owned_parts(const std::vector<StatePart>& parts, const Layouts& layouts, const std::string& plugin);

// What a data plugin loads from: each request turned into the global regions it covers.
class CheckpointStateSource final : public StateSource {
 public:
  CheckpointStateSource(CheckpointReader& reader, const Layouts& layouts) : reader_(reader), layouts_(layouts) {}
  void read_into(const at::Tensor& into, const std::string& param, const std::string& kind, int64_t start) override;
  bool has(const std::string& param, const std::string& kind) const override;

 private:
  CheckpointReader& reader_;
  const Layouts& layouts_;
};

}  // namespace plait::checkpoint
