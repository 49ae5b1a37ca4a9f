#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "debug/flight_report.hpp"  // rank_list
#include "debug/flight_summary.hpp"
#include "plait/sdk/error.hpp"
#include "output/restart_record.hpp"
#include "output/run_status.hpp"

namespace plait::cli {
namespace fs = std::filesystem;
namespace {

// How an attempt ended, from the run's own records: the restart that followed it, or the
// run's status for the latest one.
std::string attempt_heading(int attempt, bool latest, bool live, const std::vector<RestartRecord>& restarts,
                            const std::optional<RunStatusRecord>& status) {
  std::string heading = concat("attempt ", attempt, attempt == 0 ? " (the first start" : " (restart " + std::to_string(attempt));
  if (latest) {
    if (live) return heading + ", running)";
    if (!status) return heading + ")";
    return concat(heading, ", ", status->state, " at step ", status->step, ")");
  }
  for (const auto& r : restarts) {
    if (r.restart != attempt + 1) continue;
    return concat(heading, ", ended at step ", r.step_reached, ": ", r.cause,
                  r.rank >= 0 ? concat("; culprit rank ", r.rank) : std::string(), ")");
  }
  return heading + ", ended)";
}

}  // namespace

int debug_run(const DebugArgs& args) {
  std::error_code ec;
  PLAIT_CHECK(fs::is_directory(args.run, ec), concat("plait debug: ", args.run, " is not a folder"),
              "give the run folder of a job (the one with rank-<r>.log and status.json)");
  const std::vector<LiveRank> live = live_ranks(args.run);
  if (!live.empty()) {
    std::vector<int> ranks;
    for (const auto& r : live) ranks.push_back(r.rank);
    std::cout << "asking ranks " << rank_list(ranks) << " (still running) for their flight records\n";
    const std::vector<int> silent =
        request_flight_records(args.run, live, std::chrono::milliseconds(static_cast<int64_t>(args.wait_s * 1000)));
    if (!silent.empty()) {
      std::cout << "ranks " << rank_list(silent) << " did not answer within " << args.wait_s
                << " s (stopped, or stuck where plait cannot answer); their older records, if any, are used\n";
    }
  }
  // The job's size: the ranks this node started (the records add their own).
  int world = 0;
  for (const auto& r : live) world = std::max(world, r.rank + 1);
  const auto status = read_run_status(args.run);
  // A finished job's latest records are snapshots of a running one, read as such.
  const bool snapshots = !live.empty() || (status && status->state == "finished");
  const std::vector<AttemptFlight> attempts = attempts_flight(args.run, world, snapshots);
  const bool any = std::any_of(attempts.begin(), attempts.end(), [](const AttemptFlight& a) { return !a.paragraph.empty(); });
  PLAIT_CHECK(any, concat("plait debug: ", args.run, " has no flight records (flight/rank-<r>.json, or flight/attempt-<n>/ of a restarted job)"),
              "a rank writes one when it fails, is stopped, or gets SIGUSR1; a one-process run has none");
  const std::vector<RestartRecord> restarts = read_restart_records(args.run);
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    const AttemptFlight& a = attempts[i];
    const bool latest = i == 0;
    if (attempts.size() > 1) std::cout << attempt_heading(a.attempt, latest, !live.empty(), restarts, status) << ":\n";
    std::string paragraph = a.paragraph;
    if (latest && paragraph.empty()) paragraph = "no rank wrote a flight record (none failed, was stopped or was asked)";
    // A stop that was asked for caught each rank wherever it was, and a job that finished
    // left only the snapshots asked of it while it ran: waits there are no hang.
    if (latest && live.empty() && status && status->state == "stopped" && !a.paragraph.empty()) {
      paragraph = concat("The job ", status->reason, "; each rank stopped where it was, so what follows says where, "
                         "not what hung. ", paragraph);
    }
    if (latest && live.empty() && status && status->state == "finished" && !a.paragraph.empty()) {
      paragraph = concat("The job finished; these records are snapshots asked of its ranks while it ran (plait debug, "
                         "SIGUSR1), so a wait in them is one in flight, not a hang. ", paragraph);
    }
    std::cout << paragraph << "\n";
  }
  return 0;
}

}  // namespace plait::cli
