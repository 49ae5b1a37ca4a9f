#pragma once
// restarts.json in a run folder: every time the job restarted itself after a fault, what
// happened and what it cost, so that nobody has to piece it together from the logs:
//
//   [{"restart": 1, "cause": "rank 2 ... was killed by signal 9 (Killed)...", "rank": 2,
//     "culprit": {"rank": 2, "operation": "all_reduce #40 on group dp.0 (ddp grad-reduce, step 7)",
//                 "step": 7},
//     "reported_by_rank": 0, "node": 0, "at": "2026-12-04T06:00:00Z", "fault": "kill rank=2 step=7",
//     "step_reached": 6, "resumed_from_step": 4, "steps_lost": 2,
//     "checkpoint": "<run>/checkpoints/step-4", "refused_checkpoints": [],
//     "fault_to_notice_s": 0.08, "notice_to_restart_s": 0.9,
//     "restart_to_first_step_s": 2.7, "fault_to_first_step_s": 3.7}]
//
// "rank" is the culprit the flight report names (the rank that held the others up, or
// crashed), with the operation the others waited in for it and its step; when the records
// name none, the rank whose end was noticed first. "reported_by_rank": the rank whose end
// or error the launcher noticed (a hung rank's peers report its timeout).
//
// Times come from wall clocks: the strike of an injected fault (faults.jsonl, written by
// the rank before it strikes), the launcher's notice of the failure, the new start, and
// the first step the restarted job finished (reported by its rank 0).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait {

struct RestartRecord {
  int restart = 0;  // 1 for the first
  std::string cause;
  int rank = -1;    // the culprit (see above), when one is known
  std::string culprit_operation;  // what the others waited in for it, or what it was in
  int64_t culprit_step = 0;
  int reported_by_rank = -1;  // the rank whose end started it, when one did
  int node = 0;     // the node whose launcher noticed it
  std::string at;   // UTC, when it was noticed
  std::string fault;  // the injected fault that struck in that start, if one did
  int64_t step_reached = 0, resumed_from_step = 0;
  std::string checkpoint;  // empty: from the start (as the first start did)
  std::vector<std::string> refused_checkpoints;  // newer ones that failed their checks, with why
  std::optional<double> fault_to_notice_s, notice_to_restart_s, restart_to_first_step_s, fault_to_first_step_s;
};

// Written whole (a temporary file, then rename).
void write_restart_records(const std::string& run_folder, const std::vector<RestartRecord>& records);
std::vector<RestartRecord> read_restart_records(const std::string& run_folder);

// An injected fault as the rank recorded it just before it struck (faults.jsonl).
struct FaultStrike {
  std::string fault, where;
  int rank = 0, attempt = 0;
  int64_t at_us = 0;  // wall clock, µs since the epoch
};
std::vector<FaultStrike> read_fault_strikes(const std::string& run_folder);

}  // namespace plait
