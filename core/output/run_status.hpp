#pragma once
// status.json in a run folder says whether the run is starting, running, stopping,
// restarting, finished, stopped (a user or a scheduler asked: Ctrl-C, SIGTERM) or failed,
// with the reason, the last step and the time, so that nobody has to read logs
// (or guess from a missing final line) to know how a run ended:
//
//   {"state": "failed", "reason": "step 7: the loss is nan; ...", "step": 7, "steps": 20,
//    "updated": "2026-12-01T11:00:00Z", "started": "...", "pid": 4242, "host": "node-a",
//    "plait": "0.1.0"}
//
// Each write replaces the whole file (a temporary file, then rename), so a reader never
// sees half of one. Writers: the single process; plait's launcher (start and end of its
// node's ranks); the node's first rank (its steps, as it trains); under torchrun or
// Slurm, rank 0 alone; and a rank whose launcher died.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace plait {

struct RunStatusRecord {
  std::string state;   // "starting", "running", "stopping", "restarting", "finished", "stopped", "failed"
  std::string reason;  // why it failed, stopped or is stopping; empty otherwise
  int64_t step = 0;    // the last step that ended
  int64_t steps = 0;   // the steps the run was asked for
  std::string started, updated;  // UTC, ISO 8601
  int64_t pid = 0;     // of the process that wrote it
  std::string host;    // where that process runs
  int64_t restarts = 0;  // how often the job restarted itself after a fault (restarts.json says why)
  std::vector<std::string> faults;  // faults injected on purpose ([debug] faults, PLAIT_FAULTS)
};

std::string utc_now();

// The folder's status, or nothing when there is none (or it cannot be read). A run still
// said to be under way whose writer, on this host, is gone (it crashed or was killed
// before it could say so) reads as failed, saying that.
std::optional<RunStatusRecord> read_run_status(const std::string& folder);

// Whether a state says the run is over (finished, stopped, failed).
bool is_final_state(const std::string& state);

// Writes it whole; `updated` and `pid` are filled in here. Once this process has written
// that the run in `folder` failed, stopped or is stopping, a later write of a state
// under way only moves that record's step on (the main thread finishing a step after a
// stop notice's thread said how the run ends).
void write_run_status(const std::string& folder, RunStatusRecord record);

// The last step any RunStatus of this process saw end (0: none), written or not: what a
// process that is stopped reports.
int64_t last_step_ended();

// From a stop signal on, every step this process sees end is written at once, and a
// "running" write never takes the file's step back: a step whose metrics line the main
// thread writes while the stop notice's thread says how far the run got is not lost
// between the two. Call it before reading last_step_ended().
void write_every_step_from_now();

// A writer that keeps one run's status current. State "restarting": the job failed and
// its launchers are starting it again (reason: why). "stopping": a stop was asked for or a
// rank failed, and the ranks are being stopped (their grace period); the final state follows.
class RunStatus {
 public:
  // Keeps the restarts and faults an earlier writer of the folder's status recorded.
  RunStatus(std::string folder, int64_t steps);
  void note_faults(std::vector<std::string> faults) { record_.faults = std::move(faults); }
  // The launcher, between a fault and the restart that follows it (state "restarting").
  void restarting(int64_t restarts, const std::string& reason);
  // Called once, after the first step this process saw end.
  void after_first_step(std::function<void(int64_t step)> hook) { first_step_hook_ = std::move(hook); }
  // After each step; writes at most once a second (and always the last step, and when
  // `now`: a step that went wrong, so that a failure that follows names it).
  void running(int64_t step, bool now = false);
  // Each keeps the last step written (a rank may have written it), or `step_ended` when
  // that is later: what the caller knows ended that the file does not say yet.
  void finished();
  void failed(const std::string& reason, int64_t step_ended = 0);
  void stopping(const std::string& reason);
  // A stop that was asked for (a signal from a user or a scheduler): not a failure.
  void stopped(const std::string& reason, int64_t step_ended = 0);

 private:
  void write(const std::string& state, const std::string& reason);
  void catch_up(int64_t step_ended);

  std::string folder_;
  RunStatusRecord record_;
  int64_t last_write_ns_ = 0;
  std::function<void(int64_t)> first_step_hook_;
};

}  // namespace plait
