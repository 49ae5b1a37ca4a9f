// GPipe (Huang et al., 2019): every microbatch's forward, then every backward. Idle
// share (p-1)/(m+p-1); each rank holds the activations of all m microbatches at once.
#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"
#include "schedule_steps.hpp"

namespace {

class Gpipe final : public plait::PipelineSchedule, public plait::ScheduleModel {
 public:
  std::vector<plait::Action> actions(const plait::ScheduleSpec& spec, int64_t pp_rank) const override {
    std::vector<plait::Action> out;
    // Backwards in forward order, so that the last backward is the last microbatch's.
    for (int64_t i = 0; i < spec.microbatches; ++i) plait::schedules::add_forward(out, pp_rank, i, spec.pp);
    for (int64_t i = 0; i < spec.microbatches; ++i) plait::schedules::add_backward(out, pp_rank, i, spec.pp);
    return out;
  }

  double ideal_idle_share(const plait::ScheduleSpec& spec) const override {
    return plait::schedules::flush_idle_share(spec);
  }
  const char* idle_share_formula() const override { return "(p-1)/(m+p-1)"; }
  void* find_extension(std::string_view id) override { return plait::offer<plait::ScheduleModel>(this, id); }
};

}  // namespace

PLAIT_PLUGIN(Gpipe, "gpipe", "1.0.0", "", plait_schema_toml,
             "GPipe pipeline schedule: all forwards, then all backwards")
