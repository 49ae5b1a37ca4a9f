#pragma once
// What a step is reported as: one record in metrics.jsonl (every rank's figures sent to
// rank 0, which writes them summarised across ranks, and each rank's where [train]
// rank_metrics keeps them) and one progress line, every [train] log_every steps (and at
// the last step and any skipped one); the run status after every step. Communication
// and plugin figures in a record cover the steps since the one before; its time
// breakdown (time.<phase>_ms) is the step's own.
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "memory/tracking_allocator.hpp"
#include "metrics/metrics_writer.hpp"
#include "metrics/straggler_watch.hpp"
#include "metrics/step_record.hpp"
#include "metrics/tensorboard_events.hpp"
#include "train/host_syncs.hpp"
#include "train/rank.hpp"
#include "train/train_step.hpp"

namespace plait {

// Steps whose figures are recorded: every log_every-th and the last (skipped ones too,
// which the reporter adds).
inline bool is_logged_step(int64_t step, int64_t log_every, int64_t steps) {
  return step % log_every == 0 || step == steps;
}

class StepReporter {
 public:
  // `first_step`: this run's first (after a resume, the checkpoint's step + 1).
  StepReporter(const RunPlan& plan, Rank& rank, int64_t first_step);
  // On recorded steps every rank sends its figures to rank 0.
  void after_step(int64_t step, const StepOutcome& out, int64_t skipped_steps);

  // [train] rank_metrics = "auto" keeps every rank's record up to this many ranks.
  static constexpr int kRanksKeptByDefault = 8;

 private:
  std::vector<RankFigures> at_rank_zero(const RankFigures& mine);
  RankFigures own_figures(const StepOutcome& out, const StateBytes& state, const MemoryStats& mem) const;
  RankFigures with_time_and_traffic(RankFigures figures, double step_s, const CommStats::Drained& comm);
  void note_straggler(int64_t step, const std::vector<RankFigures>& ranks, nlohmann::ordered_json& record);

  const RunPlan& plan_;
  Rank& rank_;
  std::unique_ptr<MetricsWriter> metrics_;  // rank 0's
  std::unique_ptr<TensorBoardWriter> tensorboard_;  // rank 0's, with [train] tensorboard
  double flops_per_token_ = 0.0, peak_flops_ = 1.0;
  int64_t steps_ = 0, log_every_ = 1;
  bool phase_timing_ = true, keep_ranks_ = true;
  std::vector<int64_t> reads_by_step_;  // device-to-host reads of the steps not yet recorded
  HostSyncCounter syncs_;               // with debug.count_host_syncs
  bool count_wire_ = false;             // debug.count_wire_bytes
  std::vector<int64_t> syncs_by_step_;  // the waits it saw, of the steps not yet recorded
  std::chrono::steady_clock::time_point start_;
  double unrecorded_step_s_ = 0.0;  // the steps since the last record, whose communication it counts
  int64_t unrecorded_steps_ = 0;
  StragglerWatch stragglers_;       // rank 0's
};

}  // namespace plait
