#pragma once
// What the launcher and `plait debug` do with a run's flight records: ask a running job's
// ranks for theirs, and put the analysis in words (also kept as flight/report.txt).
#include <chrono>
#include <string>
#include <vector>

namespace plait {

// The flight paragraph of a run folder ("" when no rank wrote a record); it is also
// written to <run folder>/flight/report.txt. The job has at least `world_size` ranks, and
// as many as the records' highest rank says.
std::string summarise_flight(const std::string& run_folder, int world_size, bool live = false);

// Every start of a run, newest first: a job that restarted itself keeps each ended
// start's records in flight/attempt-<n>/, the latest start's in flight/.
struct AttemptFlight {
  int attempt = 0;            // 0: the first start
  std::string folder;         // its records' folder
  std::string paragraph;      // "" when no rank of it wrote a record
};
std::vector<AttemptFlight> attempts_flight(const std::string& run_folder, int world_size, bool live = false);

struct LiveRank {
  int rank = 0;
  int pid = 0;
};
// This node's ranks of the run (its ranks.json) whose processes still run it.
std::vector<LiveRank> live_ranks(const std::string& run_folder);
// Sends each SIGUSR1 and waits up to `wait` for all of their records to be rewritten;
// returns the ranks that did not answer (stopped, or stuck outside plait's reach).
std::vector<int> request_flight_records(const std::string& run_folder, const std::vector<LiveRank>& ranks,
                                        std::chrono::milliseconds wait);

}  // namespace plait
