#pragma once
// What plait's launcher does between a fault and the restart that follows it
// ([distributed] max_restarts): agree with the other nodes' launchers whether to restart
// and from which checkpoint, and keep the record of each restart (restarts.json,
// status.json, the log), timed from the fault to the first step after it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "debug/flight_report.hpp"
#include "distributed/restart_agreement.hpp"
#include "distributed/supervisor.hpp"
#include "run/launch_plan.hpp"
#include "output/restart_record.hpp"
#include "output/run_status.hpp"

namespace plait {
class JobStore;
}

namespace plait::cli {

// The last step the job ended, as far as its run folder tells: the status (its first
// rank writes it about once a second, and at once when stopped), the metrics, and the
// ranks' flight records (a rank records the step it is in). For a job that has stopped.
int64_t job_steps_ended(const std::string& run_folder);

// Every launcher calls it once its ranks of `attempt` have stopped: node 0 decides for all.
RestartDecision agree_on_restart(JobStore& job, const PreparedRun& prep, const LaunchPlan& launch, int attempt,
                                 const JobStopped& stopped);

class RestartBook {
 public:
  RestartBook(std::string run_folder, int node_rank, RunStatus& status);
  // A restart decided: logged on every node, recorded on node 0 with the culprit the
  // attempt's flight records name (read before keep_flight_records moves them).
  void restarting(const RestartDecision& decision, const std::optional<FlightCulprit>& culprit);
  // The new start's ranks were launched.
  void started();
  // Node 0, while the restarted job runs: once its rank 0 reports its first step, the
  // record gets the recovery's times.
  void poll_first_step(JobStore& attempt_store);
  // Flight records of a start that ended (this node's ranks', and those taken from the
  // other nodes) go to flight/attempt-<n>/.
  void keep_flight_records(int attempt) const;
  int restarts() const { return restarts_; }

 private:
  std::string folder_;
  int node_rank_ = 0;
  RunStatus& status_;
  int restarts_ = 0;
  std::vector<RestartRecord> records_;
  int64_t notice_us_ = 0, fault_us_ = 0, started_us_ = 0;
  bool awaiting_first_step_ = false;
};

}  // namespace plait::cli
