// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): each rank holds v virtual
// stages (stage s on rank s % p), which cuts the idle share to (p-1)/(v*m+p-1) at the
// cost of v times the point-to-point messages. The order of forwards and backwards is
// Megatron's: microbatches go through a rank's stages in groups of p.
#include <algorithm>

#include "plait/sdk/sdk.hpp"
#include "plait_schema.hpp"
#include "schedule_steps.hpp"

namespace {

class Interleaved1F1B final : public plait::PipelineSchedule {
 public:
  void configure(const plait::PluginContext& context) override {
    virtual_stages_ = context.options->get<int64_t>("virtual_stages");
  }
  int64_t stages_per_rank() const override { return virtual_stages_; }

  std::vector<plait::Action> actions(const plait::ScheduleSpec& spec, int64_t pp_rank) const override {
    using plait::schedules::add_backward;
    using plait::schedules::add_forward;
    const int64_t m = spec.microbatches, p = spec.pp, v = spec.stages_per_rank, stages = spec.stages();
    PLAIT_CHECK(m % p == 0,
                plait::concat("interleaved-1f1b needs the microbatches (train.grad_accum = ", m,
                              ") to be a multiple of pp = ", p),
                plait::concat("set train.grad_accum to ", ((m + p - 1) / p) * p, ", or use the 1f1b schedule"));
    const int64_t total = m * v;
    // The k-th forward (backward) of this rank: which of its stages, and which microbatch.
    auto stage_of = [&](int64_t k, bool forward) {
      const int64_t chunk = (k % (p * v)) / p;
      return (forward ? chunk : v - 1 - chunk) * p + pp_rank;
    };
    auto microbatch_of = [&](int64_t k) { return (k / (p * v)) * p + k % p; };
    const int64_t warmup = m == p ? total : std::min((p - pp_rank - 1) * 2 + (v - 1) * p, total);
    std::vector<plait::Action> out;
    for (int64_t k = 0; k < warmup; ++k) add_forward(out, stage_of(k, true), microbatch_of(k), stages);
    for (int64_t k = 0; k + warmup < total; ++k) {
      add_forward(out, stage_of(warmup + k, true), microbatch_of(warmup + k), stages);
      add_backward(out, stage_of(k, false), microbatch_of(k), stages);
    }
    for (int64_t k = std::max<int64_t>(total - warmup, 0); k < total; ++k) {
      add_backward(out, stage_of(k, false), microbatch_of(k), stages);
    }
    return out;
  }

 private:
  int64_t virtual_stages_ = 2;
};

}  // namespace

PLAIT_PLUGIN(Interleaved1F1B, "interleaved-1f1b", "1.0.0", "", plait_schema_toml,
             "Interleaved 1F1B pipeline schedule: v virtual stages per rank (Megatron-LM)")
