#pragma once
// How the launchers of one job agree to start it again after a fault, through the job's
// store (as torchelastic's agents do): each launcher stops its ranks and reports that it
// has (and whether it was itself told to stop); node 0's waits for every report, decides
// and publishes the decision with the checkpoint to resume from; the others take it. The
// keys live under the job's own prefix, "restart/<attempt>/...", apart from each start's.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait {

class JobStore;

// What one launcher saw end its ranks of an attempt.
struct StopReport {
  int node = 0;
  bool interrupted = false;  // it was told to stop (Ctrl-C, SIGTERM)
  std::string cause;         // the failure's first line, as that launcher put it
  int rank = -1;             // the rank of its own whose end it was; -1: another node's, or none
  int64_t noticed_us = 0;    // wall clock, µs since the epoch
  std::string fault;         // an injected fault that struck on that node in that attempt
  int64_t fault_us = 0;
  int signal = 0;            // the signal it was told to stop with
};

struct RestartDecision {
  bool restart = false;
  std::string why_not;      // when not: one sentence
  std::string resume_from;  // the checkpoint the next start resumes from; empty: as the first start did
  int64_t resume_step = 0;
  std::vector<std::string> refused;  // newer checkpoints passed over, with why
  StopReport origin;                 // where the fault came from, as the launcher nearest it saw it
  int stop_signal = 0;               // not restarted because a launcher was told to stop, with this signal

  static RestartDecision none(std::string why) {
    RestartDecision d;
    d.why_not = std::move(why);
    return d;
  }
};

// This launcher's ranks of `attempt` have all stopped.
void report_stopped(JobStore& job, int attempt, const StopReport& report);

struct StopReports {
  std::vector<int> missing;      // nodes that did not report in time
  std::vector<int> interrupted;  // nodes whose launcher was told to stop
  std::vector<StopReport> reports;
  // The report that names the fault's origin: the earliest-noticed end of a node's own rank.
  std::optional<StopReport> origin() const;
};
// Node 0: waits for every node's report of `attempt`, at most `timeout`.
StopReports await_stopped(JobStore& job, int attempt, int nnodes, std::chrono::milliseconds timeout);

void publish_decision(JobStore& job, int attempt, const RestartDecision& decision);
// The other nodes: node 0's decision, or nothing when none came within `timeout`.
std::optional<RestartDecision> await_decision(JobStore& job, int attempt, std::chrono::milliseconds timeout);

// The job id of start `attempt` (0: the job's own; then "<job>-a<attempt>").
std::string attempt_job_id(const std::string& job_id, int attempt);

// The first step a restarted start finished: its rank 0 says so once, with the wall clock
// (µs since the epoch), and node 0's launcher times the recovery from it.
void report_first_step(JobStore& attempt_store, int64_t step);
std::optional<std::pair<int64_t, int64_t>> first_step(JobStore& attempt_store);  // {step, at_us}

}  // namespace plait
