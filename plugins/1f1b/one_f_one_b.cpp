// 1F1B (PipeDream-Flush, Narayanan et al. 2021): rank r runs p-r-1 warm-up forwards,
// then alternates one forward and one backward, then drains the backwards. Same idle
// share as GPipe, (p-1)/(m+p-1), but at most p-r microbatches in flight on rank r.
#include <algorithm>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"
#include "schedule_steps.hpp"

namespace {

class OneFOneB final : public plait::PipelineSchedule, public plait::ScheduleModel {
 public:
  std::vector<plait::Action> actions(const plait::ScheduleSpec& spec, int64_t pp_rank) const override {
    using plait::schedules::add_backward;
    using plait::schedules::add_forward;
    const int64_t m = spec.microbatches, p = spec.pp;
    const int64_t warmup = std::min(p - pp_rank - 1, m);
    std::vector<plait::Action> out;
    for (int64_t i = 0; i < warmup; ++i) add_forward(out, pp_rank, i, p);
    for (int64_t i = 0; i + warmup < m; ++i) {
      add_forward(out, pp_rank, warmup + i, p);
      add_backward(out, pp_rank, i, p);
    }
    for (int64_t i = m - warmup; i < m; ++i) add_backward(out, pp_rank, i, p);
    return out;
  }

  double ideal_idle_share(const plait::ScheduleSpec& spec) const override {
    return plait::schedules::flush_idle_share(spec);
  }
  const char* idle_share_formula() const override { return "(p-1)/(m+p-1)"; }
  void* find_extension(std::string_view id) override { return plait::offer<plait::ScheduleModel>(this, id); }
};

}  // namespace

PLAIT_PLUGIN(OneFOneB, "1f1b", "1.0.0", "", plait_schema_toml,
             "1F1B pipeline schedule: warm-up forwards, then one forward and one backward in turn")
