// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): each rank holds v virtual
// stages (stage s on rank s % p), which cuts the idle share to (p-1)/(v*m+p-1) at the
// cost of v times the point-to-point messages. The order of forwards and backwards is
// Megatron's: microbatches go through a rank's stages in groups of p.
#include <algorithm>

#include "plait/sdk/sdk.hpp"
#include "plait_options.hpp"
#include "plait_schema.hpp"
#include "schedule_steps.hpp"

namespace {

class Interleaved1F1B final : public plait::PipelineSchedule, public plait::ScheduleModel {
 public:
  int64_t stages_per_rank() const override { return virtual_stages_; }

  std::vector<plait::Action> actions(const plait::ScheduleSpec& spec, int64_t pp_rank) const override {
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
    // Megatron's order of sends and receives: each forward's or backward's sends go out
    // with the receives of the next ones in one group (send_forward_backward_recv_
    // forward_backward), so that two ranks holding each other's stages never each
    // wait in a send for a receive the other has queued behind its own.
    using plait::Action;
    using T = plait::ActionType;
    std::vector<Action> out;
    const Action none{T::weight_grad, -1, -1};
    auto fwd = [&](int64_t k) { return k < total ? Action{T::forward, stage_of(k, true), microbatch_of(k)} : none; };
    auto bwd = [&](int64_t k) { return k < total ? Action{T::backward, stage_of(k, false), microbatch_of(k)} : none; };
    // The sends of a forward and a backward just run, the receives of the next ones.
    auto group = [&](Action sent_f, Action sent_b, Action next_f, Action next_b) {
      if (sent_f.stage >= 0 && sent_f.stage < stages - 1) out.push_back({T::send_activation, sent_f.stage, sent_f.microbatch});
      if (sent_b.stage > 0) out.push_back({T::send_grad, sent_b.stage, sent_b.microbatch});
      if (next_f.stage > 0) out.push_back({T::recv_activation, next_f.stage, next_f.microbatch});
      if (next_b.stage >= 0 && next_b.stage < stages - 1) out.push_back({T::recv_grad, next_b.stage, next_b.microbatch});
    };
    const int64_t steady = total - warmup;
    group(none, none, fwd(0), none);
    for (int64_t k = 0; k < warmup; ++k) {
      out.push_back(fwd(k));
      // The last warm-up forward also posts the first backward's receive.
      group(fwd(k), none, fwd(k + 1), k == warmup - 1 && steady > 0 ? bwd(0) : none);
    }
    for (int64_t k = 0; k < steady; ++k) {
      out.push_back(fwd(warmup + k));
      out.push_back(bwd(k));
      group(fwd(warmup + k), bwd(k), k + 1 < steady ? fwd(warmup + k + 1) : none, bwd(k + 1));
    }
    if (steady == 0) group(none, none, none, bwd(0));
    for (int64_t k = steady; k < total; ++k) {
      out.push_back(bwd(k));
      group(none, bwd(k), none, bwd(k + 1));
    }
    return out;
  }

  double ideal_idle_share(const plait::ScheduleSpec& spec) const override {
    return plait::schedules::flush_idle_share(spec);
  }
  const char* idle_share_formula() const override { return "(p-1)/(v*m+p-1)"; }
  void* find_extension(std::string_view id) override { return plait::offer<plait::ScheduleModel>(this, id); }

 protected:
  void on_configure() override { virtual_stages_ = plait_options::Options::from(options()).virtual_stages; }

 private:
  int64_t virtual_stages_ = 2;
};

}  // namespace

PLAIT_PLUGIN(Interleaved1F1B, "interleaved-1f1b", "1.0.0", "", plait_schema_toml,
             "Interleaved 1F1B pipeline schedule: v virtual stages per rank (Megatron-LM)")
