#pragma once
// [debug] trace_steps: every rank records the steps listed (timing/trace_recorder.hpp)
// and sends its events to rank 0 through the job's store, which writes trace.json (every
// rank and every traced step so far, one process per rank, for chrome://tracing or
// ui.perfetto.dev) and trace/rank-<r>.json (one rank's, with its distributedInfo, the
// folder Holistic Trace Analysis reads).
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "timing/trace_recorder.hpp"
#include "train/run_plan.hpp"

namespace plait {

class StepTracer {
 public:
  explicit StepTracer(const RunPlan& plan);
  void before(int64_t step);
  // After a traced step: every rank's events to rank 0 (through the store), which writes.
  void after(int64_t step);

 private:
  nlohmann::json distributed_info() const;
  nlohmann::json rank_metadata() const;
  void write(const std::vector<nlohmann::json>& ranks);  // rank 0

  const RunPlan& plan_;
  std::set<int64_t> steps_;
  std::unique_ptr<TraceRecorder> recorder_;
  std::vector<nlohmann::json> kept_;  // rank 0: every rank's {distributedInfo, events} of the steps traced so far
};

}  // namespace plait
