#pragma once
// One line of metrics.jsonl: what a step measured. Built from plain figures, so the
// record's shape is written once, whoever measured them.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "distributed/comm_stats.hpp"
#include "metrics/rank_summary.hpp"

namespace plait {

struct StepFigures {
  int64_t step = 0;
  double loss = 0.0;  // not finite: written as null
  double lr = 0.0;
  double grad_norm = 0.0;
  int64_t tokens = 0;
  int64_t counted_tokens = 0;  // targets that count in the loss
  double step_s = 0.0;
  double mfu = 0.0;
  bool skipped = false;        // the optimizer step was withheld ([train] on_nonfinite = "skip")
  int64_t skipped_steps = 0;   // so far in this run
  int64_t mem_bytes = 0, host_mem_bytes = 0;
};

// The record: the step's figures, this rank's `mine` at the top level, and the
// communication counters. The reporter adds the figures of every rank.
nlohmann::ordered_json step_record(const StepFigures& f, const RankFigures& mine, const CommStats::Drained& comm);

// The bus bytes of a step's communication (nccl-tests' counting).
double comm_bus_bytes(const CommStats::Drained& comm);

}  // namespace plait
