// A pipeline schedule built against the frozen plugin API 12.0 headers: GPipe's order
// (every forward, then every backward). API 12.1 added the ScheduleModel extension; this
// plugin predates it, so the core asks for it, gets nothing, and shows no formula.
#include <vector>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"

namespace {

class FrozenGpipe final : public plait::PipelineSchedule {
 public:
  std::vector<plait::Action> actions(const plait::ScheduleSpec& spec, int64_t stage) const override {
    using plait::ActionType;
    std::vector<plait::Action> out;
    const int64_t last = spec.pp - 1;
    for (int64_t i = 0; i < spec.microbatches; ++i) {
      if (stage > 0) out.push_back({ActionType::recv_activation, stage, i});
      out.push_back({ActionType::forward, stage, i});
      if (stage < last) out.push_back({ActionType::send_activation, stage, i});
    }
    for (int64_t i = 0; i < spec.microbatches; ++i) {
      if (stage < last) out.push_back({ActionType::recv_grad, stage, i});
      out.push_back({ActionType::backward, stage, i});
      if (stage > 0) out.push_back({ActionType::send_grad, stage, i});
    }
    return out;
  }
};

}  // namespace

PLAIT_PLUGIN(FrozenGpipe, "frozen-gpipe", "12.0.0", "", plait_schema_toml,
             "GPipe's order, built against the frozen plugin API 12.0 headers")
