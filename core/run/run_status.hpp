#pragma once
// status.json in a run folder says whether the run is starting, running, finished or
// failed, with the reason, the last step and the time, so that nobody has to read logs
// (or guess from a missing final line) to know how a run ended:
//
//   {"state": "failed", "reason": "step 7: the loss is nan; ...", "step": 7, "steps": 20,
//    "updated": "2026-12-01T11:00:00Z", "started": "...", "pid": 4242, "plait": "0.1.0"}
//
// Each write replaces the whole file (a temporary file, then rename), so a reader never
// sees half of one. Writers: the single process; plait's launcher (start and end of its
// node's ranks); the node's first rank (its steps, as it trains); under torchrun or
// Slurm, rank 0 alone; and a rank whose launcher died.
#include <cstdint>
#include <optional>
#include <string>

namespace plait {

struct RunStatusRecord {
  std::string state;   // "starting", "running", "finished", "failed"
  std::string reason;  // why it failed; empty otherwise
  int64_t step = 0;    // the last step that ended
  int64_t steps = 0;   // the steps the run was asked for
  std::string started, updated;  // UTC, ISO 8601
  int64_t pid = 0;     // of the process that wrote it
};

std::string utc_now();

// The folder's status, or nothing when there is none (or it cannot be read).
std::optional<RunStatusRecord> read_run_status(const std::string& folder);

// Writes it whole; `updated` and `pid` are filled in here.
void write_run_status(const std::string& folder, RunStatusRecord record);

// A writer that keeps one run's status current.
class RunStatus {
 public:
  RunStatus(std::string folder, int64_t steps);
  // After each step; writes at most once a second (and always the last step, and when
  // `now`: a step that went wrong, so that a failure that follows names it).
  void running(int64_t step, bool now = false);
  // Both keep the last step written (a rank may have written it).
  void finished();
  void failed(const std::string& reason);

 private:
  void write(const std::string& state, const std::string& reason);

  std::string folder_;
  RunStatusRecord record_;
  int64_t last_write_ns_ = 0;
};

}  // namespace plait
